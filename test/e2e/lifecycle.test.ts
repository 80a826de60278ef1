import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { createScratchDatabase } from '../helpers/postgres.js';

const started: ServerProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const server of started.splice(0)) await server.dispose();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function start(env: Record<string, string> = {}, reuse?: { dataDir: string; token: string }) {
  const server = await startServerProcess(env, reuse);
  started.push(server);
  return server;
}

describe('start, restart and stop', () => {
  it('creates DATA_DIR, migrates, keeps data and the bootstrap key across restarts', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'slipway-life-'));
    dirs.push(root);
    const dataDir = path.join(root, 'nested', 'data');
    const first = await start({}, { dataDir, token: 'bootstrap-token-for-restart-test' });
    expect(existsSync(path.join(dataDir, 'slipway.db'))).toBe(true);
    expect(statSync(path.join(dataDir, 'secret.key')).mode & 0o777).toBe(0o600);
    const call = api(first.url, first.token);
    const project = (await call('POST', '/api/projects', { name: 'kept' })).json.project;
    const service = (await call('POST', `/api/projects/${project.id}/services`, { name: 'web', repoFullName: 'a/b' })).json.service;
    await call('POST', `/api/services/${service.id}/env`, { key: 'TOKEN', value: 'plain-value-123' });
    expect(await first.stop()).toBe(0);

    const second = await start({}, { dataDir, token: first.token });
    const again = api(second.url, second.token);
    const overview = (await again('GET', `/api/services/${service.id}/overview`)).json;
    expect(overview.service.hostPort).toBe(service.hostPort);
    expect(overview.env[0]).toMatchObject({ key: 'TOKEN', value: 'plain-value-123' });
    const keys = (await again('GET', '/api/api-keys')).json.apiKeys;
    expect(keys.filter((k: { name: string }) => k.name === 'bootstrap')).toHaveLength(1);

    // Secrets are encrypted at rest: the plaintext is nowhere in the database files.
    const db = spawnSync('grep', ['-rc', 'plain-value-123', dataDir], { encoding: 'utf8' });
    expect(db.stdout.split('\n').filter((l) => l && !l.endsWith(':0'))).toEqual([]);
  });

  it('finishes in-flight requests on SIGTERM, then exits 0', async () => {
    const server = await start();
    const body = JSON.stringify({ name: 'in flight' });
    const url = new URL('/api/projects', server.url);
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          headers: {
            authorization: `Bearer ${server.token}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body: text }));
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 5));
      setTimeout(() => {
        server.child.kill('SIGTERM');
        setTimeout(() => req.end(body.slice(5)), 300);
      }, 100);
    });
    const result = await response;
    expect(result.status).toBe(201);
    expect(JSON.parse(result.body).project.name).toBe('in flight');
    expect(await server.stop()).toBe(0);
    expect(server.output()).toContain('"msg":"stopped"');
  });

  it('survives kill -9 with what it had committed', async () => {
    const first = await start();
    const project = (await api(first.url, first.token)('POST', '/api/projects', { name: 'durable' })).json.project;
    await first.kill();
    const second = await start({}, { dataDir: first.dataDir, token: first.token });
    const found = await api(second.url, second.token)('GET', `/api/projects/${project.slug}`);
    expect(found.json.project.id).toBe(project.id);
  });

  it('160 acknowledged writes in a burst survive SIGKILL: 0 lost', async () => {
    const first = await start();
    const call = api(first.url, first.token);
    const acknowledged: string[] = [];
    // 16 writers at once; the kill lands while later writes are still in flight.
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < 160) {
          next++;
          const res = await call('POST', '/api/projects', { name: `burst ${next}` });
          if (res.status === 201) acknowledged.push(res.json.project.id);
        }
      }),
    );
    const inFlight = Array.from({ length: 16 }, (_, i) => call('POST', '/api/projects', { name: `late ${i}` }).catch(() => undefined));
    await first.kill();
    await Promise.all(inFlight);
    expect(acknowledged).toHaveLength(160);
    const second = await start({}, { dataDir: first.dataDir, token: first.token });
    // Every page of the list (it answers pages): up to 176 projects may be there.
    const ids = new Set<string>();
    let cursor: string | null = null;
    do {
      const page: { projects: Array<{ id: string }>; nextCursor: string | null } = (
        await api(second.url, second.token)('GET', `/api/projects?limit=100${cursor ? `&cursor=${cursor}` : ''}`)
      ).json;
      for (const p of page.projects as Array<{ id: string }>) ids.add(p.id);
      cursor = page.nextCursor;
    } while (cursor);
    expect(acknowledged.filter((id) => !ids.has(id))).toEqual([]);
  }, 60_000);

  it('refuses a bad configuration with a clear message', async () => {
    await expect(startServerProcess({ HOST_PORT_RANGE: 'lots' })).rejects.toThrow(/HOST_PORT_RANGE must look like/);
  });
});

describe('PostgreSQL through DATABASE_URL', () => {
  it('migrates and serves the same API on a real PostgreSQL server', async () => {
    const database = await createScratchDatabase();
    try {
      const first = await start({ DATABASE_URL: database.url });
      expect(first.output()).toContain('"database":"postgresql"');
      const call = api(first.url, first.token);
      const project = (await call('POST', '/api/projects', { name: 'On Postgres' })).json.project;
      const db = (
        await call('POST', `/api/projects/${project.id}/services`, { name: 'pg', repoUrl: 'database', repoFullName: 'database:postgres' })
      ).json.service;
      await call('POST', `/api/services/${db.id}/domains`, { hostname: 'pg.example.com' }); // refused: databases use databasePublicHostname
      const deployment = (await call('POST', `/api/services/${db.id}/deployments`)).json.deployment;
      expect((await call('POST', `/api/deployments/${deployment.id}/abort`)).json).toEqual({ accepted: true });
      expect((await call('GET', `/api/deployments/${deployment.id}/logs`)).json.logs).toHaveLength(2);
      expect(await first.stop()).toBe(0);

      const second = await start({ DATABASE_URL: database.url }, { dataDir: first.dataDir, token: first.token });
      const overview = (await api(second.url, second.token)('GET', `/api/services/${db.id}/overview`)).json;
      expect(overview.env.map((v: { key: string }) => v.key).sort()).toEqual(['POSTGRES_DB', 'POSTGRES_PASSWORD', 'POSTGRES_USER']);
      expect(overview.deployments[0]).toMatchObject({ id: deployment.id, status: 'aborted' });
      const dup = await api(second.url, second.token)('POST', '/api/projects', { name: 'On Postgres' });
      expect(dup.json.project.slug).toBe('on-postgres-2');
    } finally {
      await database.drop();
    }
  });
});
