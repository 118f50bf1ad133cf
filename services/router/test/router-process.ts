import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';

export interface RouterProcess {
  process: ChildProcess;
  /** 127.0.0.1:<port> of its gRPC server (GRPC_PORT 0: the kernel picks one). */
  address: string;
  /** Every log line so far; keeps growing while the process runs. */
  logs: string[];
}

/** Starts the compiled router with the given environment; resolves once it logs "router serving". */
export function spawnRouter(env: NodeJS.ProcessEnv): Promise<RouterProcess> {
  const child = spawn(process.execPath, [resolve(__dirname, '../dist/main.js')], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise<RouterProcess>((resolveStarted, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      logs.push(line);
      const entry = JSON.parse(line) as { msg?: string; grpc_port?: number };
      if (entry.msg === 'router serving') {
        resolveStarted({ process: child, address: `127.0.0.1:${entry.grpc_port}`, logs });
      }
    });
    child.once('exit', (code) => reject(new Error(`router exited with ${code}: ${stderr}`)));
  });
}
