const { Client } = require('pg');
const { Load } = require('./load');
const s = require('/work/main/.local/chaos/harness.json');
async function admin(method, path, body) {
  const r = await fetch(`${s.adminUrl}/admin/v1${path}`, { method, headers: { authorization: `Bearer ${s.adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return r.json();
}
(async () => {
  const acct = await admin('POST', '/accounts', { name: 'probe', plan: 'pro' });
  await admin('PATCH', `/accounts/${acct.id}/limits`, { requests_per_minute: 100000, concurrency: 200 });
  const key = (await admin('POST', '/keys', { account_id: acct.id, name: 'p', environment: 'live', residency: 'eu', privacy_mode: 'off' })).key;
  const db = new Client({ connectionString: s.infra.databaseUrl }); await db.connect();
  const load = new Load({ baseUrl: s.baseUrl, apiKey: key, requests: 100, concurrency: 12, ratePerSecond: 12 });
  const running = load.run();
  const t0 = Date.now();
  let done = false; running.then(() => { done = true; });
  await load.whenIssued(40);
  const blk = new Client({ connectionString: s.infra.databaseUrl }); await blk.connect();
  await blk.query('BEGIN');
  const locked = await blk.query('SELECT account_id, key_id, model, environment, period_start FROM usage_aggregates WHERE account_id=$1 FOR UPDATE', [acct.id]);
  console.log('locked', JSON.stringify(locked.rows));
  await new Promise((r) => setTimeout(r, 1500));
  const b = (await db.query(`SELECT pid, client_port, state, wait_event_type, left(query,40) q, backend_xid, xact_start FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [blk.processID])).rows;
  console.log('blocked', JSON.stringify(b));
  for (const row of b) console.log(require('child_process').execSync(`ss -tnp | grep ':${row.client_port} ' || true`).toString());
  setTimeout(() => blk.query('ROLLBACK').then(() => { console.log('released'); blk.end(); }), 6000);
  while (!done || Date.now() - t0 < 12000) {
    const c = (await db.query('SELECT count(*)::int n FROM usage_events WHERE account_id=$1', [acct.id])).rows[0].n;
    const a = (await db.query(`SELECT pid, state, wait_event_type, left(query,40) q FROM pg_stat_activity WHERE datname=current_database() AND pid<>pg_backend_pid() AND state<>'idle'`)).rows;
    console.log(Date.now() - t0, 'issued', load.issued, 'events', c, JSON.stringify(a));
    await new Promise((r) => setTimeout(r, 500));
  }
  console.log(JSON.stringify((await running).failures));
  await db.end();
})();
