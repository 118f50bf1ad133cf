import { stopChaosStack } from './chaos-stack';

/** Stops the stack the global setup started, once every test file has used it. */
export default async function globalTeardown(): Promise<void> {
  await stopChaosStack();
}
