import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Ports, StateDir } from './layout';
import { isHealthy, pidOf, startProcess, stopProcess, waitHealthy } from './processes';
import type { ProcessSpec } from './processes';

const run = promisify(execFile);

export const traceViewerName = 'jaeger';

/**
 * Whether `make up` runs the trace viewer (GW_TRACE_VIEWER): `build` (the default) builds Jaeger the
 * first time (minutes, then cached), `cached` runs it only if it is already built, `off` never.
 */
export type TraceViewerMode = 'build' | 'cached' | 'off';

export function traceViewerMode(value: string | undefined): TraceViewerMode {
  if (value === undefined || value === '' || value === 'build') return 'build';
  if (value === 'cached' || value === 'off') return value;
  throw new Error(`GW_TRACE_VIEWER must be build, cached or off, got "${value}"`);
}

/** The Jaeger binary (deploy/install-jaeger.sh), built if the mode allows; undefined when there is none. */
async function jaegerBinary(repoRoot: string, mode: TraceViewerMode): Promise<string | undefined> {
  if (mode === 'off') return undefined;
  const script = join(repoRoot, 'deploy/install-jaeger.sh');
  if (mode === 'build') {
    const cached = await run('bash', [script, '--cached']).then(
      () => true,
      () => false,
    );
    if (!cached) {
      process.stdout.write(
        'building the trace viewer (Jaeger) from the Go module proxy, once: several minutes ' +
          '(GW_TRACE_VIEWER=off skips it)\n',
      );
    }
  }
  try {
    const { stdout } = await run('bash', mode === 'cached' ? [script, '--cached'] : [script], {
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout.trim() || undefined;
  } catch (error) {
    if (mode === 'cached') return undefined;
    throw error;
  }
}

/**
 * Jaeger with in-memory storage, on loopback only: an OTLP/HTTP receiver for the services and the
 * query API and UI. Its own metrics are off, so that it opens no port besides these three.
 */
function jaegerConfig(ports: Ports['traces']): string {
  return `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 50000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${ports.ui}
    grpc:
      endpoint: 127.0.0.1:${ports.uiGrpc}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${ports.otlpHttp}
processors:
  batch:
    timeout: 1s
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`;
}

export interface TraceViewer {
  /** The UI and query API (`/api/traces/<trace id>`). */
  url: string;
  /** What the services export to (OTEL_EXPORTER_OTLP_ENDPOINT). */
  otlpEndpoint: string;
  /** True when this call started it; false when it was already running. */
  started: boolean;
}

/**
 * Starts the trace viewer (or finds it running) when the mode allows and Jaeger is available;
 * undefined otherwise, and the services then trace nothing.
 */
export async function startTraceViewer(
  repoRoot: string,
  state: StateDir,
  ports: Ports['traces'],
  mode: TraceViewerMode,
): Promise<TraceViewer | undefined> {
  const binary = await jaegerBinary(repoRoot, mode);
  if (binary === undefined) return undefined;
  const configFile = join(state.root, 'jaeger.yaml');
  const spec: ProcessSpec = {
    name: traceViewerName,
    script: binary,
    command: [binary, '--config', `file:${configFile}`],
    env: {},
    health: { kind: 'http', url: `http://127.0.0.1:${ports.ui}/api/services` },
  };
  const running = await pidOf(state, spec.name);
  const healthy = running !== undefined && (await isHealthy(spec.health));
  if (!healthy) {
    if (running !== undefined) await stopTraceViewer(state);
    await mkdir(state.root, { recursive: true });
    await writeFile(configFile, jaegerConfig(ports));
    await startProcess(state, repoRoot, spec);
    await waitHealthy(state, [spec], 60_000);
  }
  return {
    url: `http://127.0.0.1:${ports.ui}`,
    otlpEndpoint: `http://127.0.0.1:${ports.otlpHttp}`,
    started: !healthy,
  };
}

/** Stops the trace viewer; its storage is in memory, so a kill after a short grace loses nothing kept. */
export function stopTraceViewer(state: StateDir): Promise<void> {
  return stopProcess(state, traceViewerName, 5_000);
}
