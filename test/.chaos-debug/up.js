const { startChaosStack } = require('./chaos-stack');
startChaosStack().then((s) => { console.log(JSON.stringify({db: s.infra.databaseUrl, base: s.baseUrl, admin: s.adminUrl, token: s.adminToken})); }, (e) => { console.error(e); process.exit(1); });
