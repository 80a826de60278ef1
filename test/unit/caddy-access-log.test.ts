import { appendFile, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CaddyRequestLogSource } from '../../adapters/proxy/caddy.request-log-source.js';
import { CaddyReverseProxy } from '../../adapters/proxy/caddy.reverse-proxy.js';
import { requestVia, startCaddy, type CaddyProcess } from '../helpers/caddy.js';

/**
 * The access log the metrics count requests from: the reader over a file (incremental, partial lines,
 * rolled files), and what a real Caddy (Debian's 2.6) writes with the configuration the platform loads.
 */
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'slipway-access-log-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const line = (host: string, status: number) =>
  `${JSON.stringify({ logger: 'http.log.access.slipway_access', request: { host }, status })}\n`;

describe('CaddyRequestLogSource', () => {
  it("starts at the end, then counts what each drain finds: per hostname, 5xx apart, ports, case and the root's dot ignored", async () => {
    const file = path.join(dir, 'a.log');
    await writeFile(file, line('old.test', 200));
    const log = new CaddyRequestLogSource(file);
    expect(await log.drain()).toEqual([]);
    await appendFile(
      file,
      `${line('a.test', 200) + line('A.test:8080', 502) + line('b.test', 404)}not json\n${line('a.test', 503)}${line('A.Test.', 200)}`,
    );
    expect(await log.drain()).toEqual([
      { hostname: 'a.test', requests: 4, errors5xx: 2 },
      { hostname: 'b.test', requests: 1, errors5xx: 0 },
    ]);
    expect(await log.drain()).toEqual([]);
  });

  it('leaves a line still being written for the next drain', async () => {
    const file = path.join(dir, 'b.log');
    await writeFile(file, '');
    const log = new CaddyRequestLogSource(file);
    await log.drain();
    const whole = line('c.test', 200);
    await appendFile(file, whole.slice(0, 10));
    expect(await log.drain()).toEqual([]);
    await appendFile(file, whole.slice(10));
    expect(await log.drain()).toEqual([{ hostname: 'c.test', requests: 1, errors5xx: 0 }]);
  });

  it('reads a rolled file (a new one in its place) from its start; no file is no count', async () => {
    const file = path.join(dir, 'c.log');
    await writeFile(file, line('d.test', 200));
    const log = new CaddyRequestLogSource(file);
    await log.drain();
    await rename(file, path.join(dir, 'c-rolled.log'));
    expect(await log.drain()).toEqual([]);
    await writeFile(file, line('d.test', 500));
    expect(await log.drain()).toEqual([{ hostname: 'd.test', requests: 1, errors5xx: 1 }]);
  });
});

describe('with a real Caddy', () => {
  let caddy: CaddyProcess;
  let upstream: Server;
  let port: number;
  beforeAll(async () => {
    caddy = await startCaddy();
    upstream = createServer((req, res) => {
      res.statusCode = req.url === '/fail' ? 500 : 200;
      res.end('ok');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    port = (upstream.address() as { port: number }).port;
  });
  afterAll(async () => {
    await caddy?.stop();
    await new Promise((resolve) => upstream?.close(resolve));
  });

  it('counts what Caddy answered per hostname, and the log keeps no URI, header or address', async () => {
    const logs = path.join(dir, 'caddy-logs');
    const proxy = new CaddyReverseProxy({
      adminUrl: caddy.adminUrl,
      httpPort: caddy.httpPort,
      httpsPort: 0,
      autoHttps: false,
      acmeEmail: null,
      routesDir: path.join(dir, 'routes'),
      accessLogDir: logs,
    });
    const applied = await proxy.apply({
      version: 'v1',
      routes: [
        { hostname: 'app.log.test', serviceId: 's1', upstream: `127.0.0.1:${port}` },
        { hostname: 'idle.log.test', serviceId: 's2', upstream: null },
      ],
    });
    expect(applied.ok, applied.detail).toBe(true);
    const reader = new CaddyRequestLogSource(path.join(logs, 'access.log'));
    await reader.drain();
    for (let i = 0; i < 5; i++) expect((await requestVia(caddy.httpPort, 'app.log.test', '/?token=very-secret'))?.status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await requestVia(caddy.httpPort, 'app.log.test', '/fail'))?.status).toBe(500);
    expect((await requestVia(caddy.httpPort, 'idle.log.test'))?.status).toBe(503);
    expect((await requestVia(caddy.httpPort, 'nobody.log.test'))?.status).toBe(404);
    // Caddy writes each line as its request ends; give the last one a moment.
    let counts = await reader.drain();
    for (let i = 0; i < 20 && counts.reduce((n, c) => n + c.requests, 0) < 9; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      counts = [...counts, ...(await reader.drain())];
    }
    const byHost = new Map<string, { requests: number; errors5xx: number }>();
    for (const c of counts) {
      const t = byHost.get(c.hostname) ?? { requests: 0, errors5xx: 0 };
      byHost.set(c.hostname, { requests: t.requests + c.requests, errors5xx: t.errors5xx + c.errors5xx });
    }
    expect(Object.fromEntries(byHost)).toEqual({
      'app.log.test': { requests: 7, errors5xx: 2 },
      'idle.log.test': { requests: 1, errors5xx: 1 },
      'nobody.log.test': { requests: 1, errors5xx: 0 },
    });
    const text = await readFile(path.join(logs, 'access.log'), 'utf8');
    expect(text).not.toContain('very-secret');
    expect(text).not.toContain('127.0.0.1');
    expect(text).not.toMatch(/"headers"|"uri"|"remote_ip"/);
  });
});
