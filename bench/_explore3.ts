import { startServer } from '../adapters/http/server.js';
import { loadConfig } from '../adapters/http/config.js';
import { existsSync, mkdirSync } from 'node:fs';
const dir = '/tmp/slw-seeded';
const fresh = !existsSync(dir);
mkdirSync(dir, { recursive: true });
const token = 'boot_' + 'x'.repeat(32);
const rs = await startServer(loadConfig({ DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1', BOOTSTRAP_API_KEY: token, RATE_LIMIT_PER_MINUTE: '0' }), { portProbe: { isFree: async () => true } });
const actor = await rs.services.apiKeys.authenticate(token);
let t = performance.now();
if (fresh) {
  for (let p = 0; p < 100; p++) {
    const proj = await rs.services.projects.create(actor, { name: `P ${p}` });
    for (let s = 0; s < 10; s++) await rs.services.services.create(actor, proj.id, { name: `svc ${s}`, repoFullName: 'acme/app' });
    if (p % 10 === 0) console.log(p, performance.now() - t);
  }
  console.log('1000 services ms', performance.now() - t);
}
const { Session } = await import('node:inspector/promises');
const session = new Session(); session.connect();
await session.post('Profiler.enable'); await session.post('Profiler.start');
t = performance.now();
for (let i = 0; i < 30; i++) await rs.services.projects.list(actor);
console.log('services.projects.list x30 (1000 svcs) ms/each', (performance.now() - t) / 30);
t = performance.now();
for (let i = 0; i < 30; i++) await fetch(rs.url + '/api/projects', { headers: { authorization: 'Bearer ' + token } }).then(r => r.text());
console.log('REST GET /api/projects x30 ms/each', (performance.now() - t) / 30);
const { profile } = await session.post('Profiler.stop');
(await import('node:fs')).writeFileSync('/tmp/prof/list.cpuprofile', JSON.stringify(profile));
await rs.close();
