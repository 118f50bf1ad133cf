/** Steps run once, last registered first, on the way out: normal end, failure, Ctrl-C or time limit. */
export class Cleanup {
  private readonly steps: { name: string; run: () => Promise<unknown> }[] = [];

  add(name: string, run: () => Promise<unknown>): void {
    this.steps.unshift({ name, run });
  }

  async runAll(): Promise<void> {
    for (const step of this.steps.splice(0)) {
      await step.run().catch((error: unknown) => {
        process.stderr.write(`cleanup: ${step.name} failed: ${(error as Error).message}\n`);
      });
    }
  }
}
