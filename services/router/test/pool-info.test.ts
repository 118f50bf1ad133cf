import { startMetricsServer } from '@gw/telemetry';
import { registerPoolInfo } from '../src/metrics';

describe('router_pool_info', () => {
  it('names the pools of the directory as it is at each scrape, so that a reload shows at once', async () => {
    const server = await startMetricsServer('router', '127.0.0.1', 0);
    const { registry } = server;
    const pools = new Map([['eu-a', { id: 'eu-a', jurisdiction: 'eu', region: 'eu-west' }]]);
    registerPoolInfo(registry, pools);
    expect(await registry.metrics()).toContain(
      'router_pool_info{pool="eu-a",jurisdiction="eu",region="eu-west",service="router"} 1',
    );

    pools.delete('eu-a');
    pools.set('uk-a', { id: 'uk-a', jurisdiction: 'uk', region: 'uk-south' });
    const scraped = await registry.metrics();
    expect(scraped).toContain('router_pool_info{pool="uk-a",jurisdiction="uk",region="uk-south",service="router"} 1');
    expect(scraped).not.toContain('pool="eu-a"');
    await server.close();
  });
});
