import type { GrpcTransport } from '@gw/config';
import { createServiceClient } from '@gw/grpc';
import { authv1, commonv1 } from '@gw/proto';

export interface DemoSeed {
  accountId: string;
  testKey: string;
  liveKey: string;
}

const demoKeys = [
  { field: 'testKey', name: 'demo test key', environment: commonv1.Environment.TEST },
  { field: 'liveKey', name: 'demo live key', environment: commonv1.Environment.LIVE },
] as const;

/**
 * The demo account and its two keys. Keys are shown once and stored only as hashes, so an earlier
 * seed is kept when its keys still verify; otherwise a fresh account and keys are made.
 */
export async function seedDemo(
  authAddress: string,
  transport: GrpcTransport,
  previous: Partial<DemoSeed>,
): Promise<DemoSeed> {
  const auth = createServiceClient(authv1.AuthService, {
    address: authAddress,
    callee: 'auth',
    defaultTimeoutMs: 5_000,
    transport,
  });
  try {
    if (previous.accountId && previous.testKey && previous.liveKey) {
      const checks = await Promise.all(
        [previous.testKey, previous.liveKey].map((key) => auth.verifyKey({ key, sourceAddress: '127.0.0.1' })),
      );
      if (checks.every((check) => check.ok && check.value.key?.accountId === previous.accountId)) {
        return previous as DemoSeed;
      }
    }
    const account = await auth.createAccount({ name: 'Demo', plan: 'pro' });
    if (!account.ok) throw new Error(`creating the demo account failed: ${account.error.message}`);
    const accountId = account.value.account!.id;
    const seed: Partial<DemoSeed> = { accountId };
    for (const { field, name, environment } of demoKeys) {
      const created = await auth.createKey({
        accountId,
        name,
        environment,
        residency: commonv1.Residency.EU,
        privacyMode: commonv1.PrivacyMode.OFF,
      });
      if (!created.ok) throw new Error(`creating the ${name} failed: ${created.error.message}`);
      seed[field] = created.value.key;
    }
    return seed as DemoSeed;
  } finally {
    auth.close();
  }
}
