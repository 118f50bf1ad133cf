import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { env, readEnv, runOrExit } from '@gw/config';
import { createLogger } from '@gw/telemetry';
import { KubeClient } from './usage-spool/kube-client';
import { claimsToDrain } from './usage-spool/spool-sweeper';

/**
 * The spool sweeper (a CronJob of the chart): finds the spool volumes of ingress pods scaled away and
 * starts a drain Job (drain-spool.ts) for each, from the Job template the chart renders. Then exits.
 */
const schema = z.object({
  LOG_LEVEL: env.logLevel(),
  NAMESPACE: z.string().min(1),
  STATEFULSET: z.string().min(1),
  /** Labels selecting the StatefulSet's pods and spool claims (key=value,…). */
  SELECTOR: z.string().min(1),
  /** JSON of the drain Job; the sweeper names it and points its `usage-spool` volume at the claim. */
  DRAIN_JOB_TEMPLATE: z.string().min(1),
});

interface Named {
  metadata: { name: string; deletionTimestamp?: string };
}

interface DrainJob {
  metadata: { name?: string; labels?: Record<string, string> };
  spec: { template: { spec: { volumes: { name: string; persistentVolumeClaim?: { claimName: string } }[] } } };
}

void runOrExit(async () => {
  const config = readEnv(schema);
  const logger = createLogger('ingress-spool-sweeper', config.LOG_LEVEL);
  const template = JSON.parse(readFileSync(config.DRAIN_JOB_TEMPLATE, 'utf8')) as DrainJob;
  const kube = new KubeClient();
  const base = `/api/v1/namespaces/${config.NAMESPACE}`;
  const selector = encodeURIComponent(config.SELECTOR);
  const names = (list: { items: Named[] }) => list.items.map((item) => item.metadata.name);
  const statefulSet = await kube.get<{ spec: { replicas?: number } }>(
    `/apis/apps/v1/namespaces/${config.NAMESPACE}/statefulsets/${config.STATEFULSET}`,
  );
  const claims = await kube.get<{ items: Named[] }>(`${base}/persistentvolumeclaims?labelSelector=${selector}`);
  const state = {
    statefulSet: config.STATEFULSET,
    replicas: statefulSet.spec.replicas ?? 1,
    claims: claims.items.filter((claim) => !claim.metadata.deletionTimestamp).map((claim) => claim.metadata.name),
    pods: names(await kube.get(`${base}/pods?labelSelector=${selector}`)),
    jobs: names(await kube.get(`/apis/batch/v1/namespaces/${config.NAMESPACE}/jobs`)),
  };
  const drains = claimsToDrain(state);
  for (const { claim, ordinal, job } of drains) {
    const manifest = structuredClone(template);
    manifest.metadata.name = job;
    manifest.metadata.labels = { ...manifest.metadata.labels, 'gateway/spool-ordinal': String(ordinal) };
    for (const volume of manifest.spec.template.spec.volumes) {
      if (volume.name === 'usage-spool') volume.persistentVolumeClaim = { claimName: claim };
    }
    await kube.post(`/apis/batch/v1/namespaces/${config.NAMESPACE}/jobs`, manifest);
    logger.info({ claim, job }, 'drain Job started for a spool volume no pod serves');
  }
  logger.info({ replicas: state.replicas, claims: state.claims.length, drains: drains.length }, 'spool volumes swept');
});
