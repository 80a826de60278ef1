import { startServerProcess, api } from '../test/helpers/server-process.js';
const t0 = Date.now();
const sp = await startServerProcess({ RATE_LIMIT_PER_MINUTE: '0' });
console.log('start ms', Date.now() - t0, sp.child.pid);
const call = api(sp.url, sp.token);
const t1 = Date.now();
for (let p = 0; p < 100; p++) {
  const r = await call('POST', '/api/projects', { name: `Project ${p}` });
  if (r.status !== 201) throw new Error(r.text);
  for (let s = 0; s < 10; s++) {
    const rs = await call('POST', `/api/projects/${r.json.project.id}/services`, { name: `svc ${s}`, repoFullName: 'acme/app' });
    if (rs.status !== 201) throw new Error(rs.text);
  }
  if (p % 10 === 0) console.log(p, Date.now() - t1);
}
console.log('seed ms', Date.now() - t1);
const r = await call('GET', '/api/projects');
console.log(r.status, r.text.length);
const t2 = Date.now();
for (let i = 0; i < 20; i++) await call('GET', '/api/projects');
console.log('20 lists ms', Date.now() - t2);
await sp.dispose();
