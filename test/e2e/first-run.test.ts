import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpText, provisionDocker } from '../helpers/docker.js';
import { api, startArgs, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/**
 * What a first run meets: the key printed at the first start, the refusal without an engine, and a
 * Docker engine that goes away while the platform runs (through a socket proxy the test cuts; the
 * real dockerd is never touched).
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const until = async <T>(fn: () => Promise<T | null | undefined | false>, timeoutMs: number, what: string): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn().catch(() => null);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
};

describe('first start of an empty data directory', () => {
  let server: ServerProcess | undefined;
  afterAll(async () => server?.dispose());

  it('prints an all-project write key once, as plain lines outside the JSON log, and never again', async () => {
    server = await startServerProcess({ BOOTSTRAP_API_KEY: '' });
    const started = server;
    // Printed right after the "listening" record.
    const token = await until(async () => /^ {5}(slw_\S+)$/m.exec(started.output())?.[1], 5_000, 'the key to be printed');
    const output = server.output();
    // No JSON record carries it; the record says a key was made, with its prefix only.
    for (const line of output.split('\n').filter((l) => l.startsWith('{'))) expect(line).not.toContain(token!);
    expect(output).toContain('"msg":"initial API key created');
    const keys = await api(server.url, token)('GET', '/api/api-keys');
    expect(keys.status).toBe(200);
    expect(keys.json).toMatchObject({ apiKeys: [{ name: 'initial', access: 'write', projectIds: null }] });
    expect(await server.stop()).toBe(0);

    const again = await startServerProcess({ BOOTSTRAP_API_KEY: '' }, { dataDir: server.dataDir, token: token! });
    try {
      expect(again.output()).not.toContain(token!);
      expect(again.output()).not.toMatch(/slw_|First start/);
      expect((await api(again.url, token)('GET', '/api/api-keys')).status).toBe(200);
    } finally {
      await again.stop();
    }
  });
});

describe('no Docker engine', () => {
  it('npm start refuses with one line saying what is missing and how to get it, and exits non-zero', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-e2e-'));
    try {
      const child = spawn(process.execPath, startArgs(), {
        cwd: ROOT,
        env: {
          ...process.env,
          HOST: '127.0.0.1',
          PORT: '0',
          DATA_DIR: dataDir,
          PROXY: 'none',
          DOCKER_SOCKET: path.join(dataDir, 'no-engine.sock'),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr.trimEnd().split('\n')).toEqual([
        expect.stringMatching(
          /^slipway: no Docker engine answers at \S+no-engine\.sock \(connect ENOENT .*\): start the engine behind DOCKER_SOCKET=/,
        ),
      ]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/** A unix socket forwarding to the real engine, which the test can cut and restore. */
class EngineSocketProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  constructor(
    readonly socketPath: string,
    private readonly target = '/var/run/docker.sock',
  ) {}

  async open(): Promise<void> {
    rmSync(this.socketPath, { force: true });
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.once('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
      client.once('close', () => upstream.destroy());
      upstream.once('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(this.socketPath, resolve));
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(this.socketPath, { force: true });
  }
}

describe('the Docker engine goes away while the platform runs', () => {
  let server: ServerProcess;
  let proxy: EngineSocketProxy;
  let dir: string;

  beforeAll(async () => {
    await provisionDocker();
    dir = mkdtempSync(path.join(tmpdir(), 'slipway-engine-proxy-'));
    proxy = new EngineSocketProxy(path.join(dir, 'docker.sock'));
    await proxy.open();
    server = await startServerProcess({ DOCKER_SOCKET: proxy.socketPath, BUILD_CONCURRENCY: '1' });
  }, 20 * 60_000);

  afterAll(async () => {
    await proxy?.open().catch(() => {});
    if (server) {
      const call = api(server.url, server.token);
      const projects = await call('GET', '/api/projects').catch(() => null);
      for (const p of (projects?.json as { projects?: Array<{ id: string }> } | undefined)?.projects ?? [])
        await call('DELETE', `/api/projects/${p.id}`).catch(() => {});
      await server.dispose();
    }
    await proxy?.cut();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('the API keeps answering, health says so, a queued deployment waits and runs once the engine is back', async () => {
    const call = api(server.url, server.token);
    expect((await call('GET', '/api/health')).json).toMatchObject({ status: 'ok', engine: { status: 'up' } });

    await proxy.cut();
    const down = await until(
      async () => {
        const res = await call('GET', '/api/health');
        return res.status === 200 && (res.json as { status: string }).status === 'degraded'
          ? (res.json as Record<string, { status: string; detail: string }>)
          : null;
      },
      10_000,
      'health to say degraded',
    );
    expect(down.engine).toMatchObject({ status: 'down', detail: expect.stringMatching(/ENOENT|ECONNREFUSED/) });
    expect(down.database!.status).toBe('up');

    const project = (await call('POST', '/api/projects', { name: 'Outage' })).json as { project: { id: string } };
    const created = await call('POST', `/api/projects/${project.project.id}/services`, {
      name: 'web',
      repoUrl: 'container-image',
      containerImage: 'busybox:latest',
      internalPort: 3000,
      startCommand: 'mkdir -p /www && echo engine-back > /www/index.html && exec httpd -f -p 3000 -h /www',
    });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const service = (created.json as { service: { id: string; hostPort: number } }).service;
    const queued = await call('POST', `/api/services/${service.id}/deployments`);
    expect(queued.status).toBe(201);
    const deploymentId = (queued.json as { deployment: { id: string } }).deployment.id;

    // Well past a few claim and maintenance passes: still queued, not failed.
    await new Promise((r) => setTimeout(r, 12_000));
    expect(((await call('GET', `/api/deployments/${deploymentId}`)).json as { deployment: { status: string } }).deployment.status).toBe(
      'queued',
    );
    const log = server.output();
    expect(log.match(/the Docker engine is unreachable/g)).toHaveLength(1);
    // A call cut mid-way (the start's recovery may be running) fails once; nothing repeats every pass.
    expect((log.match(/"msg":"(recovery|reconcile) failed"/g) ?? []).length).toBeLessThanOrEqual(1);

    await proxy.open();
    const finished = await until(
      async () => {
        const d = ((await call('GET', `/api/deployments/${deploymentId}`)).json as { deployment: { status: string } }).deployment;
        return d.status === 'queued' || d.status === 'running' ? null : d;
      },
      60_000,
      'the deployment to finish',
    );
    expect(finished.status, JSON.stringify((await call('GET', `/api/deployments/${deploymentId}/logs`)).json)).toBe('succeeded');
    expect((await httpText(`http://127.0.0.1:${service.hostPort}`))?.text).toContain('engine-back');
    expect(server.output()).toContain('the Docker engine is reachable again');
    await until(async () => ((await call('GET', '/api/health')).json as { status: string }).status === 'ok', 10_000, 'health to say ok');
  }, 120_000);
});
