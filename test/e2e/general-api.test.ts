import { generateKeyPairSync, sign } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForDeployment } from '../helpers/deployments.js';
import { docker, httpText, provisionDocker } from '../helpers/docker.js';
import { expectErrorShape } from '../helpers/error-bodies.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/*
 * The general API's doors over real HTTP against the server as `npm start` runs it, on the real
 * Docker engine: the same objects as the detailed API, a shared project variable overridden by a
 * service reaching deployed containers' environments, a database stopped (volume kept, admin calls
 * 409 not_running) and started again with its data, and a license verified against the key the
 * server was started with.
 */

const pair = generateKeyPairSync('ed25519');
const LICENSE_PUBLIC_KEY = pair.publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
function licenseKey(payload: object): string {
  const bytes = Buffer.from(JSON.stringify(payload));
  return `${bytes.toString('base64url')}.${sign(null, bytes, pair.privateKey).toString('base64url')}`;
}

let server: ServerProcess;
let call: ReturnType<typeof api>;
const projects: string[] = [];

async function project(name: string): Promise<{ id: string; slug: string }> {
  const res = await call('POST', '/api/projects', { name: `${name}-${Date.now()}` });
  expect(res.status, res.text).toBe(201);
  projects.push(res.json.project.id);
  return res.json.project;
}

function expectStatus(res: { status: number; text: string }, status: number, label: string): void {
  expect(res.status, `${label}: ${res.text.slice(0, 500)}`).toBe(status);
}

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,postgres' });
  server = await startServerProcess({
    BUILD_CONCURRENCY: '2',
    HEALTH_TIMEOUT_MS: '120000',
    STOP_GRACE_SECONDS: '2',
    WORKER_SETTLE_MS: '1500',
    LICENSE_PUBLIC_KEY,
  });
  call = api(server.url, server.token);
}, 20 * 60_000);

afterAll(async () => {
  for (const id of projects) await call?.('DELETE', `/api/projects/${id}`).catch(() => undefined);
  await server?.dispose();
}, 120_000);

describe('general doors over HTTP', () => {
  it('system/public without a key, and a license activated with the key the server trusts', async () => {
    const anonymous = api(server.url, undefined);
    const before = await anonymous('GET', '/api/system/public');
    expectStatus(before, 200, 'system/public');
    expect(before.json).toEqual({
      version: expect.any(String),
      registrationOpen: false,
      ownerExists: false,
      features: ['databases', 'deployments', 'dns'],
      license: { valid: false, licensee: null, plan: null, expiresAt: null },
    });
    const expiresAt = new Date(Date.now() + 30 * 86_400_000).toISOString();
    const key = licenseKey({ licensee: 'Acme Ltd', plan: 'business', expiresAt });
    const activated = await call('POST', '/api/settings/license', { key });
    expectStatus(activated, 200, 'activate');
    expect(activated.json.license).toEqual({ valid: true, licensee: 'Acme Ltd', plan: 'business', expiresAt });
    expect((await anonymous('GET', '/api/system/public')).json.license).toEqual(activated.json.license);
    expect((await call('GET', '/api/settings')).json.settings.license).toEqual(activated.json.license);

    const expired = await call('POST', '/api/settings/license', {
      key: licenseKey({ licensee: 'Acme Ltd', plan: 'business', expiresAt: '2021-01-01T00:00:00Z' }),
    });
    expectErrorShape(expired, 400, 'expired license');
    expect(expired.json).toMatchObject({ error: 'validation_error', details: { field: 'key' } });
    const forged = await call('POST', '/api/settings/license', { key: `${key.split('.')[0]}.${'A'.repeat(86)}` });
    expectErrorShape(forged, 400, 'forged license');
    expectErrorShape(await call('POST', '/api/settings/license', { key, plan: 'x' }), 400, 'unknown field');
    expectErrorShape(await anonymous('POST', '/api/settings/license', { key }), 401, 'no key');
  });

  it('projects by id, apps, variables, domains and deploy answer the detailed API objects', async () => {
    const p = await project('general');
    expect((await call('GET', `/api/projects/${p.id}`)).json).toEqual((await call('GET', `/api/projects/${p.slug}`)).json);
    const created = await call('POST', `/api/projects/${p.id}/services`, { name: 'web', repoFullName: 'acme/web' });
    const web = created.json.service;
    const app = await call('GET', `/api/apps/${web.id}`);
    expectStatus(app, 200, 'app');
    expect(app.json.service).toEqual((await call('GET', `/api/services/${web.id}/overview`)).json.service);
    const put = await call('PUT', `/api/apps/${web.id}`, { branch: 'develop' });
    expectStatus(put, 200, 'put app');
    expect(put.json.service.branch).toBe('develop');

    const variable = await call('POST', `/api/services/${web.id}/variables`, { key: 'TOKEN', value: 't0k', secret: true });
    expectStatus(variable, 201, 'variable');
    expect(variable.json.variable).toMatchObject({ key: 'TOKEN', secret: true, value: '' });
    expect(variable.text).not.toContain('t0k');
    const changed = await call('PUT', `/api/services/${web.id}/variables/${variable.json.variable.id}`, { value: 'plain', secret: false });
    expect(changed.json.variable).toMatchObject({ value: 'plain', secret: false });
    expect((await call('GET', `/api/services/${web.id}/variables`)).json.variables).toEqual(
      (await call('GET', `/api/services/${web.id}/overview`)).json.env,
    );
    expectStatus(await call('DELETE', `/api/services/${web.id}/variables/${variable.json.variable.id}`), 200, 'delete variable');

    const domain = await call('POST', `/api/projects/${p.id}/domains`, { serviceId: web.id, hostname: 'general.example.test' });
    expectStatus(domain, 201, 'domain');
    expect((await call('GET', `/api/projects/${p.id}/domains`)).json.domains).toEqual([domain.json.domain]);
    expectStatus(await call('DELETE', `/api/domains/${domain.json.domain.id}`), 200, 'delete domain');
    expect((await call('GET', `/api/projects/${p.id}/domains`)).json.domains).toEqual([]);

    const deployed = await call('POST', `/api/services/${web.id}/deploy`);
    expectStatus(deployed, 201, 'deploy');
    expect((await call('GET', `/api/deployments/${deployed.json.deployment.id}`)).json.deployment.serviceId).toBe(web.id);
    await call('POST', `/api/deployments/${deployed.json.deployment.id}/abort`);
    expectStatus(await call('DELETE', `/api/apps/${web.id}`), 200, 'delete app');
    expectErrorShape(await call('GET', `/api/apps/${web.id}`), 404, 'deleted app');
  });
});

describe('shared project variables in deployed containers', () => {
  it('every service gets them, a service of its own key wins, and ${shared.KEY} resolves', { timeout: 10 * 60_000 }, async () => {
    const p = await project('shared-env');
    const put = await call('PUT', `/api/projects/${p.id}/env`, {
      env: { GREETING: 'from-shared', REGION: 'eu-west', API_TOKEN: { value: 'shared-secret-value', secret: true } },
    });
    expectStatus(put, 200, 'put shared');
    expect(put.text).not.toContain('shared-secret-value');
    const startCommand = 'mkdir -p /www && env > /www/index.html && exec httpd -f -p 3000 -h /www';
    const make = async (name: string, env: Array<{ key: string; value: string }>) => {
      const res = await call('POST', `/api/projects/${p.id}/services`, {
        name,
        repoUrl: 'container-image',
        containerImage: 'busybox:latest',
        internalPort: 3000,
        startCommand,
        env,
      });
      expectStatus(res, 201, `service ${name}`);
      return res.json.service as { id: string; hostPort: number };
    };
    const own = await make('own', [
      { key: 'GREETING', value: 'from-service' },
      { key: 'URL', value: 'https://${shared.REGION}.example.test' },
    ]);
    const plain = await make('plain', []);
    const listed = (await call('GET', `/api/services/${own.id}/variables`)).json.variables;
    expect(listed.find((v: { key: string }) => v.key === 'URL').resolvedValue).toBe('https://eu-west.example.test');

    const queued = await call('POST', `/api/projects/${p.id}/deploy`);
    expectStatus(queued, 201, 'deploy project');
    expect(queued.json.deployments.map((d: { serviceId: string }) => d.serviceId)).toEqual([own.id, plain.id]);
    for (const d of queued.json.deployments) {
      const done = await waitForDeployment(call, d.id, 5 * 60_000);
      expect(done.deployment.status, done.logs.join('\n')).toBe('succeeded');
      expect(done.logs.join('\n')).not.toContain('shared-secret-value');
    }
    const envOf = async (hostPort: number) => {
      const text = (await httpText(`http://127.0.0.1:${hostPort}/`))?.text ?? '';
      return Object.fromEntries(
        text.split('\n').flatMap((l) => (l.includes('=') ? [[l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]] : [])),
      );
    };
    expect(await envOf(own.hostPort)).toMatchObject({
      GREETING: 'from-service',
      REGION: 'eu-west',
      URL: 'https://eu-west.example.test',
      API_TOKEN: 'shared-secret-value',
    });
    expect(await envOf(plain.hostPort)).toMatchObject({ GREETING: 'from-shared', REGION: 'eu-west', API_TOKEN: 'shared-secret-value' });
  });
});

describe('databases: stop keeps the volume, start runs it again with its data', () => {
  it('creates, deploys, stops (409 not_running), starts, and the row is still there', { timeout: 10 * 60_000 }, async () => {
    const p = await project('general-db');
    const created = await call('POST', '/api/databases', { projectId: p.id, name: 'main', engine: 'postgres' });
    expectStatus(created, 201, 'create database');
    const db = created.json.database;
    expect((await call('GET', '/api/databases')).json.databases.map((d: { id: string }) => d.id)).toContain(db.id);
    const queued = await call('POST', `/api/services/${db.id}/deploy`);
    const done = await waitForDeployment(call, queued.json.deployment.id, 5 * 60_000);
    expect(done.deployment.status, done.logs.join('\n')).toBe('succeeded');
    const query = (sql: string) => call('POST', `/api/databases/${db.id}/query`, { sql });
    expectStatus(await query('CREATE TABLE kept (id serial PRIMARY KEY, note text)'), 200, 'create table');
    expectStatus(await query("INSERT INTO kept (note) VALUES ('survives')"), 200, 'insert');

    const stopped = await call('POST', `/api/databases/${db.id}/stop`);
    expectStatus(stopped, 200, 'stop');
    expect(stopped.json.database.status).toBe('stopped');
    expect((await call('GET', `/api/databases/${db.id}`)).json.database.status).toBe('stopped');
    const refused = await query('SELECT 1');
    expectErrorShape(refused, 409, 'query on a stopped database');
    expect(refused.json.error).toBe('not_running');
    expect((await call('GET', `/api/services/${db.id}/database/tables`)).json.error).toBe('not_running');
    const state = await docker('inspect', '--format', '{{.State.Running}}', done.deployment.containerName!);
    expect(state.trim()).toBe('false');

    const started = await call('POST', `/api/databases/${db.id}/start`);
    expectStatus(started, 200, 'start');
    expect(started.json.database.status).toBe('active');
    // The server inside needs a moment to accept connections again.
    const deadline = Date.now() + 60_000;
    let rows: unknown = null;
    while (Date.now() < deadline) {
      const res = await query('SELECT note FROM kept');
      if (res.status === 200) {
        rows = res.json.rows;
        break;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(rows).toEqual([{ note: 'survives' }]);
    expectStatus(await call('DELETE', `/api/databases/${db.id}`), 200, 'delete database');
    expectErrorShape(await call('GET', `/api/databases/${db.id}`), 404, 'deleted database');
  });
});
