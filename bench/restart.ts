/**
 * A restart with running services (issue 32: "a restart with 100 running services restores every route within
 * 2 s and restarts no service container"). In one run it starts a real Caddy (test/helpers/caddy.ts) and the
 * platform as `npm start` runs it, deploys BENCH_SERVICES (100) container-image services with a domain each and
 * waits until Caddy serves every hostname; then it stops the platform (SIGTERM), restarts Caddy empty (as
 * after a host restart: no route left), starts the platform again on the same data directory and times, from
 * the spawn, its first answer and the moment every hostname answers 200 through Caddy again. Each service
 * container's id and start time, read before and after, say whether any was restarted or replaced.
 * Run: npm run bench:restart (BENCH_SIZE=tiny: 3 services).
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { api, startServerProcess, type ServerProcess } from '../test/helpers/server-process.js';
import { docker, provisionDocker } from '../test/helpers/docker.js';
import { waitForDeployment } from '../test/helpers/deployments.js';
import { requestVia, startCaddy, type CaddyProcess } from '../test/helpers/caddy.js';
import { benchPortRange, table, TINY } from './bench-support.js';
import { runBench } from './run-bench.js';

const SERVICES = TINY ? 3 : Number(process.env.BENCH_SERVICES ?? 100);
/** Deployments asked for at once while seeding (BUILD_CONCURRENCY is the same). */
const SEED_BATCH = 4;
const TARGET_MS = 2000;

interface Seeded {
  id: string;
  hostname: string;
  container: string;
}

/** Every hostname answering 200 through Caddy, polled together; the time from `since` when the last one did. */
async function allServed(port: number, hostnames: string[], since: number, timeoutMs: number): Promise<number> {
  const pending = new Set(hostnames);
  const deadline = since + timeoutMs;
  let lastAt = since;
  while (pending.size > 0) {
    if (performance.now() > deadline) throw new Error(`${pending.size} of ${hostnames.length} hostnames not served within ${timeoutMs} ms`);
    await Promise.all(
      [...pending].map(async (hostname) => {
        const res = await requestVia(port, hostname, '/', 1000);
        if (res?.status === 200) {
          pending.delete(hostname);
          lastAt = performance.now();
        }
      }),
    );
    if (pending.size > 0) await sleep(20);
  }
  return lastAt - since;
}

/** Id and start time of each container, by name. */
async function containerStates(names: string[]): Promise<Map<string, string>> {
  const out = await docker('inspect', '-f', '{{.Name}} {{.Id}} {{.State.StartedAt}} {{.RestartCount}}', ...names);
  return new Map(
    out
      .trim()
      .split('\n')
      .map((line) => {
        const [name, ...rest] = line.trim().split(' ');
        return [name!.replace(/^\//, ''), rest.join(' ')] as [string, string];
      }),
  );
}

async function main(): Promise<void> {
  await provisionDocker();
  let caddy: CaddyProcess | null = null;
  let server: ServerProcess | null = null;
  let first: ServerProcess | null = null;
  let projectId: string | null = null;
  const env = (c: CaddyProcess) => ({
    ...c.platformEnv,
    HOST_PORT_RANGE: benchPortRange(Math.max(200, SERVICES * 2)),
    BUILD_CONCURRENCY: String(SEED_BATCH),
    STOP_GRACE_SECONDS: '1',
    RATE_LIMIT_PER_MINUTE: '0',
  });
  try {
    caddy = await startCaddy();
    server = await startServerProcess(env(caddy));
    let call = api(server.url, server.token);
    const nonce = randomBytes(3).toString('hex');
    projectId = (await call('POST', '/api/projects', { name: `bench-restart-${nonce}` })).json.project.id as string;

    const seedStarted = performance.now();
    const seeded: Seeded[] = [];
    for (let i = 0; i < SERVICES; i += SEED_BATCH) {
      const batch = Array.from({ length: Math.min(SEED_BATCH, SERVICES - i) }, (_, j) => i + j);
      // Services one at a time (two made at once may race for a host port), their deployments together.
      const made: Array<{ id: string; hostname: string }> = [];
      for (const n of batch) {
        const created = await call('POST', `/api/projects/${projectId}/services`, {
          name: `web-${n}`,
          repoUrl: 'container-image',
          containerImage: 'busybox:latest',
          startCommand: `echo ok-${n} > /tmp/index.html && exec httpd -f -p 3000 -h /tmp`,
          internalPort: 3000,
        });
        if (created.status !== 201) throw new Error(`${created.status} ${created.text}`);
        const hostname = `web-${n}.restart-${nonce}.test`;
        const domain = await call('POST', `/api/services/${created.json.service.id}/domains`, { hostname });
        if (domain.status !== 201) throw new Error(`${domain.status} ${domain.text}`);
        made.push({ id: created.json.service.id as string, hostname });
      }
      const done = await Promise.all(
        made.map(async (m) => {
          const res = await call('POST', `/api/services/${m.id}/deployments`);
          if (res.status !== 201) throw new Error(`${res.status} ${res.text}`);
          return waitForDeployment(call, res.json.deployment.id as string, 180_000);
        }),
      );
      done.forEach((d, j) => {
        if (d.deployment.status !== 'succeeded') throw new Error(d.logs.join('\n'));
        seeded.push({ ...made[j]!, container: d.deployment.containerName! });
      });
    }
    const hostnames = seeded.map((s) => s.hostname);
    await allServed(caddy.httpPort, hostnames, performance.now(), 60_000);
    const seedS = (performance.now() - seedStarted) / 1000;
    const before = await containerStates(seeded.map((s) => s.container));

    // The restart: the platform stops, Caddy comes back empty, the platform starts on the same data.
    const loadBefore = loadavg()[0]!;
    const code = await server.stop();
    if (code !== 0) throw new Error(`the platform stopped with ${code}: ${server.output().slice(-2000)}`);
    await caddy.restart();
    const gone = await requestVia(caddy.httpPort, hostnames[0]!, '/', 1000);
    if (gone?.status === 200) throw new Error('Caddy still served a route after its restart');
    const spawned = performance.now();
    const reused = { dataDir: server.dataDir, token: server.token };
    first = server;
    server = await startServerProcess(env(caddy), reused);
    const listeningMs = performance.now() - spawned;
    call = api(server.url, server.token);
    const routedMs = await allServed(caddy.httpPort, hostnames, spawned, 60_000);
    const after = await containerStates(seeded.map((s) => s.container));
    const restarted = seeded.filter((s) => before.get(s.container) !== after.get(s.container)).length;
    const loadAfter = loadavg()[0]!;

    console.log(
      `\nRestart with ${SERVICES} running services, each with a domain (seeded in ${seedS.toFixed(0)} s); Caddy restarted empty while the platform was down; load average ${loadBefore.toFixed(1)} -> ${loadAfter.toFixed(1)}`,
    );
    console.log(
      table([
        ['measure', 'value', 'target'],
        ['spawn -> "listening" (the start helper saw it)', `${listeningMs.toFixed(0)} ms`, '-'],
        [
          `spawn -> all ${SERVICES} hostnames answer 200 through Caddy`,
          `${routedMs.toFixed(0)} ms`,
          `<= ${TARGET_MS} ms ${routedMs <= TARGET_MS ? 'MET' : 'MISSED'}`,
        ],
        ['service containers restarted or replaced', String(restarted), `0 ${restarted === 0 ? 'MET' : 'MISSED'}`],
      ]),
    );
    // Removing 100 containers outlasts the API helper's 15 s timeout.
    const removed = await fetch(`${server.url}/api/projects/${projectId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${server.token}` },
      signal: AbortSignal.timeout(300_000),
    });
    if (removed.status >= 300) throw new Error(`DELETE project: ${removed.status} ${await removed.text()}`);
    projectId = null;
  } finally {
    if (server && projectId) await api(server.url, server.token)('DELETE', `/api/projects/${projectId}`).catch(() => {});
    await server?.dispose().catch(() => {});
    // The restarted server reused the first one's data directory, so its dispose leaves the install's
    // data and leftovers (its traffic gate's container, its slot network) alone: the first one's removes them.
    await first?.dispose().catch(() => {});
    await caddy?.stop().catch(() => {});
  }
}

await runBench(main, 30 * 60_000);
