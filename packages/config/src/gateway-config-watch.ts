import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { ConfigError } from './env';
import { gatewayConfigHashOf, parseGatewayConfig, readGatewayConfigText } from './gateway-config';
import type { GatewayConfig, LoadedGatewayConfig } from './gateway-config';

/** One attempt to reload: the new file put in force, or refused with the reason (the old one stays). */
export type GatewayConfigReload =
  { outcome: 'applied'; loaded: LoadedGatewayConfig } | { outcome: 'rejected'; hash: string; reason: string };

export interface GatewayConfigWatchOptions {
  /** Puts a new, validated configuration in force; what it throws refuses the file like a bad file. */
  apply(config: GatewayConfig): void;
  /** Told of every reload attempt, for the log and the metrics. */
  report(reload: GatewayConfigReload): void;
  env?: NodeJS.ProcessEnv;
  /**
   * How often the file is looked at whatever the watcher says (default 10 s): a watch can miss an
   * event (some volumes report none), a look at a file that has not changed costs one read and a hash.
   */
  pollIntervalMs?: number;
  /** Quiet time after a change event before reading (default 100 ms): an update comes as several events. */
  settleMs?: number;
  now?: () => number;
}

export interface GatewayConfigWatch {
  /** Looks at the file now; resolves once the look (and any reload) is done. */
  check(): Promise<void>;
  close(): void;
}

/**
 * Follows the YAML file: when its text changes, the new file is validated first and put in force only
 * if valid; a bad file keeps the configuration in force and is reported once (until the text changes
 * again). The directory is watched, not the file: a Kubernetes ConfigMap update swaps a symlink in the
 * directory, which a watch on the old file would never see. A periodic look backs the watch up.
 * Nothing here runs per request.
 */
export function watchGatewayConfig(
  path: string,
  initial: LoadedGatewayConfig,
  options: GatewayConfigWatchOptions,
): GatewayConfigWatch {
  const env = options.env ?? process.env;
  const now = options.now ?? Date.now;
  /** The text last looked at, applied or refused: the same text is never tried twice. */
  let lastSeen = initial.hash;
  let closed = false;

  const look = async (): Promise<void> => {
    let text: string;
    let hash: string;
    try {
      text = await readGatewayConfigText(path);
      hash = gatewayConfigHashOf(text);
    } catch (error) {
      // Mid-swap the file may be briefly missing: reported once, and read again at the next look.
      const reason = (error as Error).message;
      if (lastSeen !== `unreadable:${reason}`) {
        lastSeen = `unreadable:${reason}`;
        options.report({ outcome: 'rejected', hash: 'unreadable', reason });
      }
      return;
    }
    if (hash === lastSeen || closed) return;
    lastSeen = hash;
    try {
      const config = parseGatewayConfig(text, env);
      options.apply(config);
      options.report({ outcome: 'applied', loaded: { config, hash, loadedAtMs: now() } });
    } catch (error) {
      const reason = error instanceof ConfigError ? error.message : `could not apply: ${(error as Error).message}`;
      options.report({ outcome: 'rejected', hash, reason });
    }
  };

  /**
   * One look at a time. A request while a look runs queues one more (which reads the file as it is
   * then); requests while one is queued share it.
   */
  let previous: Promise<void> = Promise.resolve();
  let queued: Promise<void> | undefined;
  const check = (): Promise<void> => {
    if (queued) return queued;
    const next = previous.then(() => {
      queued = undefined;
      return closed ? undefined : look();
    });
    queued = next;
    previous = next.catch(() => undefined);
    return next;
  };

  let settling: NodeJS.Timeout | undefined;
  const changed = (_event: string, file: string | Buffer | null) => {
    // Events for other files of the directory are ignored, except the ConfigMap's "..data" swap.
    const name = file?.toString();
    if (name !== undefined && name !== basename(path) && !name.startsWith('..')) return;
    clearTimeout(settling);
    settling = setTimeout(() => void check().catch(() => undefined), options.settleMs ?? 100);
    settling.unref();
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(path), { persistent: false }, changed);
    // A watch that fails later (the directory removed) leaves the periodic look.
    watcher.on('error', () => watcher?.close());
  } catch {
    watcher = undefined;
  }
  const poll = setInterval(() => void check().catch(() => undefined), options.pollIntervalMs ?? 10_000);
  poll.unref();

  return {
    check,
    close: () => {
      closed = true;
      clearInterval(poll);
      clearTimeout(settling);
      watcher?.close();
    },
  };
}
