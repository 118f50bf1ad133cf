import { join, resolve } from 'node:path';
import { repoRoot, stateDir } from './layout';
import { serviceNames, stopInfra, stopServices } from './stack';
import { stopTraceViewer } from './trace-viewer';

/** `make down`: stops what `make up` started in this state directory, and nothing else. */
async function down(): Promise<void> {
  const state = stateDir(resolve(process.env.GW_STATE_DIR ?? join(repoRoot, '.local')));
  await stopServices({ state }, serviceNames);
  await stopTraceViewer(state);
  await stopInfra(repoRoot, state);
  process.stdout.write('stopped\n');
}

down().catch((error: unknown) => {
  process.stderr.write(`make down failed: ${(error as Error).message}\n`);
  process.exit(1);
});
