import { harness } from './harness';
import { rawRequest } from './http';
import { startIngressReplica } from './replicas';
import type { Replica } from './replicas';

const h = harness();
/** An ingress whose public API is on 127.0.0.2 (HTTP_HOST) and whose ADMIN_HOST is left to its default. */
const exposed = { http: 21101, admin: 21102, metrics: 21103 };

interface Envelope {
  type: string;
  error: { type: string; message: string };
  request_id: string;
}

describe('the admin API is only on the admin port, at ADMIN_HOST', () => {
  let ingress: Replica | undefined;

  beforeAll(async () => {
    // The replica is healthy once its admin port answers on 127.0.0.1: not where HTTP_HOST points.
    ingress = await startIngressReplica(h, exposed, h.replica.quotaAddress, { HTTP_HOST: '127.0.0.2' });
  }, 30_000);

  afterAll(() => ingress?.stop());

  const operator = { authorization: `Bearer ${h.adminToken}` };

  it('answers /admin/v1/... on the public port with 404 in the error envelope, operator token or not', async () => {
    for (const url of [`${h.baseUrl}/admin/v1/accounts`, `http://127.0.0.2:${exposed.http}/admin/v1/accounts`]) {
      for (const headers of [operator, {}]) {
        const response = await rawRequest(url, { method: 'GET', headers });
        expect(response.status).toBe(404);
        const body = JSON.parse(response.body) as Envelope;
        expect(body).toEqual({
          type: 'error',
          error: { type: 'not_found_error', message: 'Unknown endpoint: GET "/admin/v1/accounts".' },
          request_id: response.headers['request-id'],
        });
      }
    }
  });

  it('serves the admin API on loopback by default while the public API is elsewhere', async () => {
    const adminOnLoopback = await rawRequest(`http://127.0.0.1:${exposed.admin}/admin/v1/accounts`, {
      method: 'GET',
      headers: operator,
    });
    expect(adminOnLoopback.status).toBe(200);
    const refusal = (url: string) =>
      rawRequest(url, { method: 'GET', headers: operator }).then(
        (response) => `answered ${response.status}`,
        (error: NodeJS.ErrnoException) => error.code,
      );
    // Nothing listens on the admin port at HTTP_HOST, and the public API is not on loopback.
    expect(await refusal(`http://127.0.0.2:${exposed.admin}/admin/v1/accounts`)).toBe('ECONNREFUSED');
    expect(await refusal(`http://127.0.0.1:${exposed.http}/v1/models`)).toBe('ECONNREFUSED');
    const publicApi = await rawRequest(`http://127.0.0.2:${exposed.http}/v1/models`, {
      method: 'GET',
      headers: { 'x-api-key': h.testKey },
    });
    expect(publicApi.status).toBe(200);
  });
});
