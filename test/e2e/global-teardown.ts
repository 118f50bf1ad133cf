import { join } from 'node:path';
import { repoRoot, serviceNames, stateDir, stopServices } from '@gw/local-stack';
import { giveBackStackLock } from './stack-lock';

export default async function globalTeardown(): Promise<void> {
  await stopServices({ state: stateDir(join(repoRoot, '.local', 'e2e')) }, serviceNames);
  await giveBackStackLock();
}
