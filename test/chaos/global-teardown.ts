import { stopChaosStack } from './chaos-stack';

/** Safety net: the test file stops the stack in its afterAll; this stops it if that never ran. */
export default async function globalTeardown(): Promise<void> {
  await stopChaosStack();
}
