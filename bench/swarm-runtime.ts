/**
 * One runtime path or two (issue 31): the deploy-to-live latency of a new version of a running web
 * service on one server, today's way (plain `docker run` of the new container beside the old one, live at
 * its first HTTP 200) against a one-node swarm (`docker service update`, start-first, a HEALTHCHECK every
 * HEALTH_INTERVAL, live at the first answer of the new version through Caddy's dynamic upstreams on
 * `tasks.<service>`), in one run, on one namespaced engine of the test cluster harness (the host's engine
 * is never put in swarm mode). The image is local on the node: no registry on one server.
 * Printed: per round both times, medians, and the ratio swarm / plain. Run:
 *   bash scripts/ensure-node.sh npx tsx bench/swarm-runtime.ts   (BENCH_ROUNDS, default 5; HEALTH_INTERVAL and CADDY_REFRESH, default 1s)
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { promisify } from 'node:util';
import { provisionDocker } from '../test/helpers/docker.js';
import { startTestCluster } from '../test/helpers/test-cluster.js';
import { median } from './bench-support.js';

const run = promisify(execFile);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const HEALTH_INTERVAL = process.env.HEALTH_INTERVAL ?? '1s';
const REFRESH = process.env.CADDY_REFRESH ?? '1s';
const APP = 'mkdir -p /www && echo "version $VERSION" > /www/index.html && exec httpd -f -p 3000 -h /www';
// busybox's wget segfaults here; nc asks the app the way the platform's probe does.
const CHECK = 'printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 2 127.0.0.1 3000 | head -n 1 | grep -q " 200 "';

/** The body of a 200 from `url` (Host set: fetch would drop it), or null. */
function answer(url: string, host?: string): Promise<string | null> {
  return new Promise((resolve) => {
    const req = get(url, { headers: host ? { host } : {}, timeout: 2000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve(res.statusCode === 200 ? text.trim() : null));
      res.on('error', () => resolve(null));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
  });
}

async function until(check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}

await provisionDocker({ images: 'busybox,caddy' });
const cluster = await startTestCluster({ nodes: ['s'], images: ['busybox:1', 'caddy:2'] });
const node = cluster.manager;
const d = (...args: string[]) => cluster.docker('s', ...args);
try {
  // The swarm side: an attachable overlay, the service (dnsrr, start-first, health-checked), Caddy on the overlay.
  await d('network', 'create', '--driver', 'overlay', '--attachable', 'apps');
  await d(
    'service',
    'create',
    '--detach',
    '--quiet',
    '--name',
    'web',
    '--endpoint-mode',
    'dnsrr',
    '--network',
    'apps',
    '--update-order',
    'start-first',
    '--update-parallelism',
    '1',
    '--stop-grace-period',
    '5s',
    '--health-cmd',
    CHECK,
    '--health-interval',
    HEALTH_INTERVAL,
    '--health-timeout',
    '5s',
    '--health-retries',
    '3',
    '--env',
    'VERSION=0',
    'busybox:1',
    'sh',
    '-c',
    APP,
  );
  const config = `${cluster.dir}/caddy.json`;
  writeFileSync(
    config,
    JSON.stringify({
      admin: { listen: '0.0.0.0:2019' },
      apps: {
        http: {
          servers: {
            edge: {
              listen: [':80'],
              automatic_https: { disable: true },
              routes: [
                {
                  match: [{ host: ['web.test'] }],
                  handle: [
                    {
                      handler: 'reverse_proxy',
                      dynamic_upstreams: { source: 'a', name: 'tasks.web', port: '3000', refresh: REFRESH },
                      load_balancing: { try_duration: '5s', try_interval: '50ms' },
                      transport: { protocol: 'http', dial_timeout: '1s' },
                    },
                  ],
                },
              ],
            },
          },
        },
      },
    }),
  );
  await d(
    'run',
    '-d',
    '--name',
    'edge',
    '--network',
    'apps',
    '-p',
    `${node.address}:8080:80`,
    '-v',
    `${config}:/etc/caddy/c.json:ro`,
    'caddy:2',
    'caddy',
    'run',
    '--config',
    '/etc/caddy/c.json',
  );
  const viaCaddy = () => answer(`http://${node.address}:8080/`, 'web.test');
  await until(async () => (await viaCaddy()) === 'version 0');

  const plain: number[] = [];
  const swarm: number[] = [];
  let previous: string | null = null;
  for (let round = 1; round <= ROUNDS; round++) {
    // Plain: a new container beside the old one, live at its first 200 (as the platform's health probe sees it).
    const port = 20_000 + round;
    let started = performance.now();
    await d(
      'run',
      '-d',
      '--name',
      `plain-${round}`,
      '-p',
      `${node.address}:${port}:3000`,
      '-e',
      `VERSION=${round}`,
      'busybox:1',
      'sh',
      '-c',
      APP,
    );
    await until(async () => (await answer(`http://${node.address}:${port}/`)) === `version ${round}`);
    plain.push(performance.now() - started);
    if (previous) await d('rm', '-f', previous);
    previous = `plain-${round}`;

    // Swarm: a rolling update, live when Caddy answers with the new version.
    started = performance.now();
    await d('service', 'update', '--detach', '--quiet', '--env-add', `VERSION=${round}`, 'web');
    await until(async () => (await viaCaddy()) === `version ${round}`);
    swarm.push(performance.now() - started);
    // The old task is gone before the next round (its 2 s gossip delay and stop).
    await until(
      async () => (await d('service', 'inspect', '--format', '{{if .UpdateStatus}}{{.UpdateStatus.State}}{{end}}', 'web')) === 'completed',
    );
    console.log(`round ${round}: plain ${plain.at(-1)!.toFixed(0)} ms, swarm ${swarm.at(-1)!.toFixed(0)} ms`);
  }
  const p = median(plain);
  const s = median(swarm);
  console.log('\n| path | median deploy-to-live (ms) | ratio |');
  console.log('|---|---|---|');
  console.log(`| plain docker run (today) | ${p.toFixed(0)} | 1.00x |`);
  console.log(
    `| one-node swarm, service update start-first, health every ${HEALTH_INTERVAL}, Caddy refresh ${REFRESH} | ${s.toFixed(0)} | ${(s / p).toFixed(2)}x |`,
  );
  console.log(`(${ROUNDS} rounds; load average ${(await run('cat', ['/proc/loadavg'])).stdout.split(' ')[0]})`);
} finally {
  await cluster.down();
}
