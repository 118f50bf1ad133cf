import { chaosState, startChaosStack, stopChaosStack } from '../chaos/chaos-stack';
import { soakNodeFlags } from './inspector';

/**
 * The chaos suite's stack in the soak's own state directory and ports (jest.soak.config.js). A fresh Kafka
 * broker on a loaded machine now and then refuses the new topic's metadata for a moment ("does not host this
 * topic-partition"); a soak is long enough that starting once more beats failing before it began.
 */
export default async function globalSetup(): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    const started = Date.now();
    try {
      const stack = await startChaosStack(soakNodeFlags);
      process.stdout.write(
        `\nsoak: stack up in ${((Date.now() - started) / 1_000).toFixed(1)} s (state ${chaosState.root}, topic ${stack.usageTopic})\n`,
      );
      return;
    } catch (error) {
      // Jest runs no teardown after a failed setup: leave nothing running.
      await stopChaosStack();
      if (attempt === 3) throw error;
      process.stdout.write(`\nsoak: starting the stack failed (${(error as Error).message}); once more\n`);
    }
  }
}
