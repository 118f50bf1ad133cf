import { chaosState, startChaosStack, stopChaosStack } from './chaos-stack';

/** Starts the chaos tests' own stack: infrastructure on its own ports, migrations, services. */
export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  try {
    const stack = await startChaosStack();
    process.stdout.write(
      `\nchaos: stack up in ${((Date.now() - started) / 1_000).toFixed(1)} s (state ${chaosState.root}, topic ${stack.usageTopic})\n`,
    );
  } catch (error) {
    // Jest runs no teardown after a failed setup: leave nothing running.
    await stopChaosStack();
    throw error;
  }
}
