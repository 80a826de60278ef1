import { startServer } from '../adapters/http/server.js';
import { loadConfig } from '../adapters/http/config.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
const dir = mkdtempSync(path.join(process.env.BASE ?? tmpdir(), 'slw-x-'));
const token = 'boot_' + 'x'.repeat(32);
const useProbe = process.argv[2] === 'probe';
const rs = await startServer(loadConfig({ DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1', BOOTSTRAP_API_KEY: token, RATE_LIMIT_PER_MINUTE: '0' }), useProbe ? {} : { portProbe: { isFree: async () => true } });
const actor = await rs.services.apiKeys.authenticate(token);
let t = performance.now();
for (let p = 0; p < 20; p++) {
  const proj = await rs.services.projects.create(actor, { name: `P ${p}` });
  for (let s = 0; s < 10; s++) await rs.services.services.create(actor, proj.id, { name: `svc ${s}`, repoFullName: 'acme/app' });
}
console.log('200 services ms', performance.now() - t);
t = performance.now();
for (let i = 0; i < 20; i++) await rs.services.projects.list(actor);
console.log('list x20 (200 svcs) ms', performance.now() - t);
await rs.close();
