import { createServer } from 'node:https';
import type { Server } from 'node:https';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { Webhook } from 'standardwebhooks';
import { createTestCertificateAuthority } from '@gw/testing';
import { attemptDelivery } from '../src/webhooks/dispatcher';
import { nextAttemptAt } from '../src/webhooks/outbox';
import { httpsSender } from '../src/webhooks/sender';
import { signedHeaders, newSigningSecret } from '../src/webhooks/signing';
import { isPublicAddress, parseEndpointUrl, vetTarget } from '../src/webhooks/targets';
import type { Resolver, TargetPolicy } from '../src/webhooks/targets';

/** A resolver stub: names to the addresses a test chooses; anything else does not resolve. */
function stubResolver(answers: Record<string, string[]>): Resolver & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (hostname: string) => {
    asked.push(hostname);
    const addresses = answers[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { asked });
}

const url = (text: string) => {
  const parsed = parseEndpointUrl(text);
  if (!parsed.ok) throw new Error(parsed.error.message);
  return parsed.value;
};

describe('isPublicAddress', () => {
  it.each([
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '127.0.0.1',
    '127.8.9.10',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '192.0.2.10',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    '::ffff:10.0.0.1',
    '::ffff:127.0.0.1',
    '64:ff9b::a00:1',
    '2002:a00:1::',
    '2001:db8::1',
  ])('refuses %s', (address) => expect(isPublicAddress(address)).toBe(false));

  it.each(['93.184.215.14', '8.8.8.8', '2606:4700::6810:84e5', '::ffff:8.8.8.8'])('accepts %s', (address) =>
    expect(isPublicAddress(address)).toBe(true),
  );
});

describe('parseEndpointUrl', () => {
  it.each([
    { name: 'plain http', text: 'http://hooks.example.com/', why: 'expected an https:// URL' },
    { name: 'credentials', text: 'https://user:pw@hooks.example.com/', why: 'user name or password' },
    { name: 'a fragment', text: 'https://hooks.example.com/#x', why: 'fragment' },
    { name: 'not a URL', text: 'not a url', why: 'is not a URL' },
    { name: '2,100 characters', text: `https://hooks.example.com/${'a'.repeat(2100)}`, why: 'at most 2048' },
  ])('refuses $name', ({ text, why }) => {
    const parsed = parseEndpointUrl(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error.message).toContain(why);
  });
});

describe('vetTarget with a resolver stub', () => {
  const policy = (answers: Record<string, string[]>, allowed: string[] = []): TargetPolicy & { asked: string[] } => {
    const resolve = stubResolver(answers);
    return { resolve, allowedPrivateTargets: new Set(allowed), asked: resolve.asked };
  };

  it('refuses a name that resolves to a private address', async () => {
    const vetted = await vetTarget(url('https://hooks.example.com/in'), policy({ 'hooks.example.com': ['10.0.0.7'] }));
    expect(vetted.ok).toBe(false);
    if (!vetted.ok) expect(vetted.error.message).toMatch(/private, loopback or link-local/);
  });

  it('refuses a name with one private address among public ones', async () => {
    const vetted = await vetTarget(
      url('https://hooks.example.com/'),
      policy({ 'hooks.example.com': ['93.184.215.14', '169.254.169.254'] }),
    );
    expect(vetted.ok).toBe(false);
  });

  it('refuses private address literals without asking the resolver, in any notation the URL parser reads', async () => {
    const stub = policy({});
    for (const literal of [
      'https://127.0.0.1/',
      'https://[::1]/',
      'https://2130706433/',
      'https://0x7f.1/',
      'https://[::ffff:a00:1]/',
    ]) {
      expect((await vetTarget(url(literal), stub)).ok).toBe(false);
    }
    expect(stub.asked).toEqual([]);
  });

  it('accepts a public name, and pins the address it resolved to', async () => {
    const vetted = await vetTarget(
      url('https://Hooks.Example.com:8443/in?x=1'),
      policy({ 'hooks.example.com': ['93.184.215.14'] }),
    );
    expect(vetted).toMatchObject({
      ok: true,
      value: { hostname: 'hooks.example.com', port: 8443, address: '93.184.215.14', family: 4 },
    });
  });

  it('accepts a private name only when its host:port is allow-listed', async () => {
    const answers = { 'receiver.internal': ['10.0.0.7'] };
    expect(
      (await vetTarget(url('https://receiver.internal:9443/'), policy(answers, ['receiver.internal:9443']))).ok,
    ).toBe(true);
    expect(
      (await vetTarget(url('https://receiver.internal:9444/'), policy(answers, ['receiver.internal:9443']))).ok,
    ).toBe(false);
    expect((await vetTarget(url('https://receiver.internal/'), policy(answers, ['receiver.internal:443']))).ok).toBe(
      true,
    );
  });

  it('refuses a name that does not resolve', async () => {
    const vetted = await vetTarget(url('https://nowhere.example/'), policy({}));
    expect(vetted.ok).toBe(false);
    if (!vetted.ok) expect(vetted.error.message).toMatch(/does not resolve/);
  });
});

describe('a delivery attempt', () => {
  let dir: string;
  let server: Server;
  let port: number;
  let ca: string[];
  const received: { headers: Record<string, string>; body: string }[] = [];
  let connections = 0;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'webhook-delivery-'));
    const authority = await createTestCertificateAuthority(dir, 'webhook test CA');
    const leaf = await authority.issue('receiver');
    ca = [...rootCertificates, await readFile(authority.certFile, 'utf8')];
    server = createServer(
      { cert: await readFile(leaf.certFile), key: await readFile(leaf.keyFile) },
      (request, response) => {
        let body = '';
        request.setEncoding('utf8');
        request.on('data', (chunk: string) => (body += chunk));
        request.on('end', () => {
          received.push({ headers: request.headers as Record<string, string>, body });
          response.writeHead(204).end();
        });
      },
    );
    server.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  const message = (secret: string, target: string) => ({
    id: 'msg_test1',
    body: JSON.stringify({
      type: 'usage.threshold_crossed',
      timestamp: '2026-11-28T10:00:00.000Z',
      data: { threshold_percent: 80 },
    }),
    url: target,
    secrets: [secret],
    endpointDeleted: false,
  });

  it('is never made to a name that resolves to a loopback address unless allow-listed: no connection at all', async () => {
    const secret = newSigningSecret();
    const resolve = stubResolver({ localhost: ['127.0.0.1'] });
    const sent = jest.fn(httpsSender);
    const outcome = await attemptDelivery(message(secret, `https://localhost:${port}/hooks`), {
      policy: { resolve, allowedPrivateTargets: new Set() },
      send: sent,
      ca,
      timeoutMs: 5_000,
      now: Date.now,
    });
    expect(outcome).toEqual({ error: expect.stringMatching(/private, loopback or link-local/) });
    expect(resolve.asked).toEqual(['localhost']);
    expect(sent).not.toHaveBeenCalled();
    expect(connections).toBe(0);
  });

  it('is signed so that the Standard Webhooks reference library verifies it, over HTTPS to the allow-listed receiver', async () => {
    const secret = newSigningSecret();
    const resolve = stubResolver({ localhost: ['127.0.0.1'] });
    const outcome = await attemptDelivery(message(secret, `https://localhost:${port}/hooks?account=1`), {
      policy: { resolve, allowedPrivateTargets: new Set([`localhost:${port}`]) },
      send: httpsSender,
      ca,
      timeoutMs: 5_000,
      now: Date.now,
    });
    expect(outcome).toEqual({ statusCode: 204 });
    const delivery = received.at(-1)!;
    expect(delivery.headers['webhook-id']).toBe('msg_test1');
    expect(delivery.headers.host).toBe(`localhost:${port}`);
    expect(new Webhook(secret).verify(delivery.body, delivery.headers)).toEqual(JSON.parse(delivery.body));
    expect(() => new Webhook(newSigningSecret()).verify(delivery.body, delivery.headers)).toThrow();
  });

  it('fails (no answer) against a server whose certificate the trusted authorities did not sign', async () => {
    const outcome = await attemptDelivery(message(newSigningSecret(), `https://localhost:${port}/hooks`), {
      policy: {
        resolve: stubResolver({ localhost: ['127.0.0.1'] }),
        allowedPrivateTargets: new Set([`localhost:${port}`]),
      },
      send: httpsSender,
      ca: undefined,
      timeoutMs: 5_000,
      now: Date.now,
    });
    expect(outcome).toEqual({ error: expect.stringMatching(/CERT|SIGN|ISSUER|VERIFY/i) });
  });
});

describe('signedHeaders', () => {
  it('signs with every secret given, so that a rotated-out secret still verifies during its grace', () => {
    const [current, previous] = [newSigningSecret(), newSigningSecret()];
    const body = '{"type":"key.rotated"}';
    const headers = signedHeaders([current, previous], 'msg_2', Math.floor(Date.now() / 1000), body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const secret of [current, previous])
      expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
  });
});

describe('nextAttemptAt', () => {
  const backoff = { baseMs: 5_000, maxMs: 3_600_000 };
  const now = Date.UTC(2026, 10, 28);
  const day = new Date(now + 86_400_000);
  it('doubles from the base to the maximum, with a tenth of jitter', () => {
    expect(nextAttemptAt(1, now, day, backoff, () => 0.5)!.getTime()).toBe(now + 5_000);
    expect(nextAttemptAt(3, now, day, backoff, () => 0.5)!.getTime()).toBe(now + 20_000);
    expect(nextAttemptAt(20, now, day, backoff, () => 0.5)!.getTime()).toBe(now + 3_600_000);
    expect(nextAttemptAt(1, now, day, backoff, () => 0)!.getTime()).toBe(now + 4_500);
  });
  it('gives up past the retry window', () => {
    expect(nextAttemptAt(20, now, new Date(now + 1_000_000), backoff)).toBeUndefined();
  });
  it('keeps trying for 24 hours: about 30 attempts', () => {
    let at = now;
    let attempts = 0;
    for (
      let next = nextAttemptAt(1, at, day, backoff, () => 0.5);
      next;
      next = nextAttemptAt(++attempts + 1, at, day, backoff, () => 0.5)
    )
      at = next.getTime();
    expect(day.getTime() - at).toBeLessThan(3_600_000);
    expect(attempts).toBeGreaterThan(25);
  });
});
