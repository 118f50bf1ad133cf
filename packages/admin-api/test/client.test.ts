import { adminApi, endpoints, routePath } from '../src';

describe('the typed client', () => {
  it('knows each route of the table by the endpoint its declaration takes', () => {
    expect(Object.keys(endpoints)).toEqual(Object.keys(adminApi));
    for (const [name, route] of Object.entries(adminApi)) {
      expect({ name: route.name, method: route.method, path: route.path }).toEqual(
        endpoints[name as keyof typeof endpoints],
      );
    }
  });

  it('fills in path parameters encoded, and leaves out empty query values', () => {
    expect(routePath(endpoints.resendDelivery, { params: { id: 'whep_1', message_id: 'msg/../x' } })).toBe(
      '/admin/v1/webhooks/whep_1/deliveries/msg%2F..%2Fx/resend',
    );
    expect(
      routePath(endpoints.listKeys, { query: { account_id: 'acct 1', q: '', status: undefined, limit: '5' } }),
    ).toBe('/admin/v1/keys?account_id=acct+1&limit=5');
  });
});
