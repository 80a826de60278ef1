// Usage: node test/spikes/caddy-load-keepalive.mjs <caddy host:port> <admin host:port> none|load (docs/cluster-findings.md, item 3).
// Idle keep-alive connections across a Caddy config load: N connections each answer once, sit idle,
// a load happens, then each sends again on its own socket. Counts errors of reused sockets.
import http from 'node:http';
const [target, admin, mode] = process.argv.slice(2);
const [host, port] = target.split(':');
const N = 16;
const agents = Array.from({ length: N }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
const once = (agent) =>
  new Promise((resolve) => {
    const req = http.request({ host, port, path: '/', headers: { Host: 'web.test' }, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ ok: res.statusCode === 200, reused: req.reusedSocket }));
    });
    req.on('error', (e) => resolve({ ok: false, error: e.code || e.message, reused: req.reusedSocket }));
    req.end();
  });
const results = [];
for (let round = 0; round < 5; round++) {
  await Promise.all(agents.map(once));
  await new Promise((r) => setTimeout(r, 300));
  const cfg = await (await fetch(`http://${admin}/config/`)).json();
  const started = performance.now();
  if (mode === 'load') {
    cfg.apps.http.servers.edge.routes[0].handle[0].load_balancing.try_interval = `${50 + round}ms`;
    const r = await fetch(`http://${admin}/load`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(cfg),
    });
    if (!r.ok) throw new Error(await r.text());
  }
  const loadMs = performance.now() - started;
  await new Promise((r) => setTimeout(r, 300));
  const after = await Promise.all(agents.map(once));
  results.push({
    round,
    loadMs: Math.round(loadMs),
    reusedFailed: after.filter((a) => !a.ok && a.reused).length,
    reused: after.filter((a) => a.reused).length,
    errors: [...new Set(after.filter((a) => !a.ok).map((a) => a.error))],
  });
}
console.log(mode, JSON.stringify(results));
