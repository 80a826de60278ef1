import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../helpers/deployments.js';
import { expectErrorShape } from '../helpers/error-bodies.js';
import { docker, provisionDocker } from '../helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/*
 * PostgreSQL TLS end to end, on real containers of the stand-in image (Debian's PostgreSQL 15 as
 * postgres:17 and as timescale): the platform makes its CA, issues a server certificate per
 * deployment, and the server runs with ssl=on. A `pg` client verifies it as `sslmode=verify-full`
 * does: the chain against GET tls/ca and the name against the public hostname. The hostname has no
 * DNS here, so the client dials 127.0.0.1 (the host port) and checks the certificate against the
 * hostname given as `servername`, exactly what a client resolving the name to this machine checks.
 */

type Call = ReturnType<typeof api>;
const ENV = {
  BUILD_CONCURRENCY: '2',
  HEALTH_TIMEOUT_MS: '120000',
  STOP_GRACE_SECONDS: '5',
  // Other installs run tests on this host at the same time: host ports of our own, away from the default range's start.
  HOST_PORT_RANGE: ((from) => `${from}-${from + 49}`)(30_000 + Math.floor(Math.random() * 600) * 50),
};

let server: ServerProcess;
let call: Call;
let projectId: string;

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,debian,postgres,timescale' });
  server = await startServerProcess(ENV);
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: `tls-${Date.now()}` })).json.project.id;
}, 20 * 60_000);

afterAll(async () => {
  if (projectId && call) await call('DELETE', `/api/projects/${projectId}`).catch(() => undefined);
  await server?.dispose();
});

async function envOf(serviceId: string): Promise<Record<string, string>> {
  const { env } = (await call('GET', `/api/services/${serviceId}/overview`)).json;
  const out: Record<string, string> = {};
  for (const variable of env as Array<{ id: string; key: string }>)
    out[variable.key] = (await call('POST', `/api/services/${serviceId}/env/${variable.id}/reveal`)).json.value;
  return out;
}

/** Connects as verify-full would, to the host port, checking the certificate against `servername`. */
async function connect(
  port: number,
  env: Record<string, string>,
  ssl: { ca?: string; servername: string },
): Promise<{ ssl: boolean; version: string }> {
  const client = new pg.Client({
    host: '127.0.0.1',
    port,
    user: env.POSTGRES_USER,
    password: env.POSTGRES_PASSWORD,
    database: env.POSTGRES_DB,
    connectionTimeoutMillis: 10_000,
    ssl: { ...ssl, rejectUnauthorized: true },
  });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const { rows } = await client.query('SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
    return rows[0] as { ssl: boolean; version: string };
  } finally {
    await client.end().catch(() => undefined);
  }
}

describe.each(['postgres', 'timescale'] as const)('%s', (engine) => {
  const hostname = `${engine}-tls-${Date.now()}.example.test`;
  let service: { id: string; slug: string; hostPort: number };

  it('is served with TLS that verify-full accepts against the platform CA and the public hostname', { timeout: 10 * 60_000 }, async () => {
    const created = await call('POST', `/api/projects/${projectId}/services`, {
      name: `${engine} tls`,
      repoUrl: 'database',
      repoFullName: `database:${engine}`,
      branch: 'main',
      databasePublicHostname: hostname,
    });
    expect(created.status, created.text).toBe(201);
    service = created.json.service;

    const before = await call('GET', `/api/services/${service.id}/database/tls`);
    expect(before.status, before.text).toBe(200);
    expect(before.json.tls).toMatchObject({ active: false, publicHostname: hostname, publicPort: service.hostPort });

    const result = await deploy(call, service.id, 5 * 60_000);
    expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
    expect(result.logs.join('\n')).toContain('ssl=on');

    const info = await call('GET', `/api/services/${service.id}/database/tls`);
    expect(info.json).toEqual({ tls: { active: true, caCertAvailable: true, publicHostname: hostname, publicPort: service.hostPort } });
    const ca = await fetch(`${server.url}/api/services/${service.id}/database/tls/ca`, {
      headers: { authorization: `Bearer ${server.token}` },
    });
    expect(ca.status).toBe(200);
    expect(ca.headers.get('content-type')).toBe('application/x-pem-file');
    const pem = await ca.text();
    expect(pem).toMatch(/^-----BEGIN CERTIFICATE-----\n[\s\S]+-----END CERTIFICATE-----\n$/);

    const env = await envOf(service.id);
    const answer = await connect(service.hostPort, env, { ca: pem, servername: hostname });
    expect(answer.ssl).toBe(true);
    expect(answer.version).toMatch(/^TLSv1\.[23]$/);
    // The slug is a name of the certificate too: peers of the project reach it by that name.
    expect((await connect(service.hostPort, env, { ca: pem, servername: service.slug })).ssl).toBe(true);
    // verify-full refuses another name, and a chain it has no root for.
    await expect(connect(service.hostPort, env, { ca: pem, servername: 'other.example.test' })).rejects.toThrow(/does not match|altnames/i);
    await expect(connect(service.hostPort, env, { servername: hostname })).rejects.toThrow(/self[- ]signed|unable to (get|verify)/i);
  });

  it("passes libpq's own sslmode=verify-full (psql) with the CA, by the public hostname", { timeout: 5 * 60_000 }, async () => {
    const pem = await (
      await fetch(`${server.url}/api/services/${service.id}/database/tls/ca`, { headers: { authorization: `Bearer ${server.token}` } })
    ).text();
    const env = await envOf(service.id);
    // psql of the stand-in image on the host's network, the public hostname mapped to this machine as DNS would map it.
    const run = (name: string) =>
      docker(
        'run',
        '--rm',
        '--name',
        `slipway-tls-test-psql-${Date.now()}`,
        '--network',
        'host',
        '--add-host',
        `${name}:127.0.0.1`,
        '-e',
        `CA=${pem}`,
        '-e',
        `PGPASSWORD=${env.POSTGRES_PASSWORD}`,
        '--entrypoint',
        'sh',
        'postgres:17',
        '-c',
        'printf "%s" "$CA" > /tmp/ca.pem && psql "$0" -tAc "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"',
        `host=${name} port=${service.hostPort} user=${env.POSTGRES_USER} dbname=${env.POSTGRES_DB} sslmode=verify-full sslrootcert=/tmp/ca.pem`,
      );
    expect(await run(hostname)).toBe('t');
    // A name the certificate does not carry is refused by libpq itself.
    await expect(run('elsewhere.example.test')).rejects.toThrow(/does not match host name|server certificate/);
  });

  it('keeps one CA across deployments and issues the server certificate again', { timeout: 10 * 60_000 }, async () => {
    const first = await (
      await fetch(`${server.url}/api/services/${service.id}/database/tls/ca`, { headers: { authorization: `Bearer ${server.token}` } })
    ).text();
    const result = await deploy(call, service.id, 5 * 60_000);
    expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
    const second = await (
      await fetch(`${server.url}/api/services/${service.id}/database/tls/ca`, { headers: { authorization: `Bearer ${server.token}` } })
    ).text();
    expect(second).toBe(first);
    expect((await connect(service.hostPort, await envOf(service.id), { ca: second, servername: hostname })).ssl).toBe(true);
  });
});

describe('other services', () => {
  it('answers 400 for TLS of a non-Postgres service', async () => {
    const created = await call('POST', `/api/projects/${projectId}/services`, {
      name: 'cache',
      repoUrl: 'database',
      repoFullName: 'database:redis',
      branch: 'main',
    });
    expect(created.status, created.text).toBe(201);
    const info = await call('GET', `/api/services/${created.json.service.id}/database/tls`);
    expectErrorShape(info, 400, 'tls of redis');
    const ca = await call('GET', `/api/services/${created.json.service.id}/database/tls/ca`);
    expectErrorShape(ca, 400, 'tls/ca of redis');
    const missing = await call('GET', '/api/services/nosuchservice/database/tls');
    expectErrorShape(missing, 404, 'unknown service');
  });

  it('keeps the CA key sealed in the database', async () => {
    const { readFileSync, readdirSync } = await import('node:fs');
    const path = await import('node:path');
    const files = readdirSync(server.dataDir)
      .filter((f) => f.startsWith('slipway.db'))
      .map((f) => readFileSync(path.join(server.dataDir, f)).toString('latin1'))
      .join('\n');
    expect(files).toContain('BEGIN CERTIFICATE');
    expect(files).not.toContain('PRIVATE KEY');
  });
});
