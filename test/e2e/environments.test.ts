import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestVia, startCaddy, quietPort, type CaddyProcess } from '../helpers/caddy.js';
import { deploy } from '../helpers/deployments.js';
import { docker, ownPortRange, provisionDocker } from '../helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/*
 * Environments end to end, over real HTTP, on the real Docker engine and a real Caddy: a project
 * with a web service and a PostgreSQL database (the stand-in images of test/provision/images.sh)
 * whose connection URL the web service builds with ${db.KEY} references; production deployed, then
 * cloned into staging and the clone deployed. Both copies serve side by side, each on its own
 * network and generated hostname, each answering from its own database; deleting the clone leaves
 * production serving.
 */
const run = promisify(execFile);
const ROOT_DOMAIN = 'apps.test';

/**
 * The web service: Perl (in the postgres image, with psql) answering `ok` on `/`, and on `/marker`
 * what `psql $DATABASE_URL` reads from the table `markers` of the database the URL resolves to.
 */
const WEB_SERVER = [
  '$|=1;',
  'my $s = IO::Socket::INET->new(LocalPort => $ENV{PORT}, Listen => 16, ReuseAddr => 1) or die "listen: $!";',
  'while (my $c = $s->accept) {',
  '  my $req = <$c> // "";',
  '  while (my $l = <$c>) { last if $l =~ /^\\r?\\n$/ }',
  '  my $body = "ok";',
  '  if ($req =~ m{^GET /marker}) { $body = qx(psql "$ENV{DATABASE_URL}" -tAc "select marker from markers" 2>&1); $body =~ s/\\s+$//; }',
  '  print $c "HTTP/1.1 200 OK\\r\\nContent-Type: text/plain\\r\\nContent-Length: " . length($body) . "\\r\\nConnection: close\\r\\n\\r\\n" . $body;',
  '  close $c;',
  '}',
].join(' ');

let caddy: CaddyProcess;
let httpPort: number;
let server: ServerProcess;
let call: ReturnType<typeof api>;
const projectIds: string[] = [];

interface Service {
  id: string;
  slug: string;
  environmentId: string;
  name: string;
}

async function ok(res: Promise<{ status: number; text: string; json: any }>, label: string, status = 200): Promise<any> {
  const answer = await res;
  expect(answer.status, `${label}: ${answer.text}`).toBe(status);
  return answer.json;
}

async function deployed(service: Service): Promise<void> {
  const result = await deploy(call, service.id, 240_000);
  expect(result.deployment.status, `${service.name}:\n${result.logs.join('\n')}`).toBe('succeeded');
}

async function sql(databaseId: string, statement: string): Promise<any> {
  return ok(call('POST', `/api/databases/${databaseId}/query`, { sql: statement }), statement);
}

/** The answer of the web service for `hostname` through Caddy. */
async function marker(hostname: string): Promise<{ status: number; text: string }> {
  const answer = await requestVia(httpPort, hostname, '/marker', 15_000);
  expect(answer, `no answer through Caddy for ${hostname}`).not.toBeNull();
  return answer!;
}

/** The running container of a service, as Docker reports it. */
async function containerOf(
  serviceId: string,
): Promise<{ name: string; networks: Record<string, { IPAddress: string; Aliases: string[] | null }> }> {
  const names = (await docker('ps', '--filter', `label=slipway.service=${serviceId}`, '--format', '{{.Names}}'))
    .split('\n')
    .filter(Boolean);
  expect(names, `running containers of ${serviceId}`).toHaveLength(1);
  const [inspected] = JSON.parse(await docker('inspect', names[0]!)) as Array<{ NetworkSettings: { Networks: Record<string, never> } }>;
  return { name: names[0]!, networks: inspected!.NetworkSettings.Networks };
}

/** The name `db` as the web container's resolver answers it (getent, from libc). */
async function resolveDbFrom(container: string): Promise<string> {
  return (await docker('exec', container, 'getent', 'hosts', 'db')).split(/\s+/)[0]!;
}

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,debian,node,postgres' });
  await run('bash', ['test/provision/caddy.sh']);
  caddy = await startCaddy();
  httpPort = await quietPort();
  server = await startServerProcess({
    ...caddy.platformEnv,
    PROXY_HTTP_PORT: String(httpPort),
    ROOT_DOMAIN,
    BUILD_CONCURRENCY: '2',
    STOP_GRACE_SECONDS: '1',
    HEALTH_TIMEOUT_MS: '120000',
    HOST_PORT_RANGE: ownPortRange(),
  });
  call = api(server.url, server.token);
}, 30 * 60_000);

afterAll(async () => {
  try {
    for (const id of projectIds) await call?.('DELETE', `/api/projects/${id}`).catch(() => undefined);
  } finally {
    await server?.dispose();
    await caddy?.stop();
  }
}, 120_000);

describe('environments', () => {
  it('clones production into staging: both copies serve side by side, each from its own database on its own network and hostname; deleting the clone leaves production serving', {
    timeout: 15 * 60_000,
  }, async () => {
    const { project } = await ok(call('POST', '/api/projects', { name: `envs-${Date.now().toString(36)}` }), 'project', 201);
    projectIds.push(project.id);
    const { environments } = await ok(call('GET', `/api/projects/${project.id}/environments`), 'environments');
    expect(environments).toEqual([expect.objectContaining({ id: project.id, name: 'production', isDefault: true })]);

    const db: Service = (
      await ok(
        call('POST', `/api/projects/${project.id}/services`, { name: 'db', repoUrl: 'database', repoFullName: 'database:postgres' }),
        'db',
        201,
      )
    ).service;
    const web: Service = (
      await ok(
        call('POST', `/api/projects/${project.id}/services`, {
          name: 'web',
          repoUrl: 'container-image',
          containerImage: 'postgres:17',
          internalPort: 3000,
          startCommand: `exec perl -MIO::Socket::INET -e '${WEB_SERVER}'`,
          env: [{ key: 'DATABASE_URL', value: 'postgres://${db.POSTGRES_USER}:${db.POSTGRES_PASSWORD}@db:5432/${db.POSTGRES_DB}' }],
        }),
        'web',
        201,
      )
    ).service;
    expect([db.environmentId, web.environmentId]).toEqual([project.id, project.id]);
    await deployed(db);
    await deployed(web);
    await sql(db.id, 'CREATE TABLE markers (marker text)');
    await sql(db.id, "INSERT INTO markers VALUES ('production')");
    const production = `web-${project.slug}.${ROOT_DOMAIN}`;
    expect(await marker(production)).toEqual({ status: 200, text: 'production' });

    // The clone: a new environment with a copy of each service, none deployed yet.
    const cloned = await ok(call('POST', `/api/environments/${project.id}/clone`, { name: 'staging' }), 'clone', 201);
    const staging = cloned.environment;
    expect(staging).toMatchObject({ projectId: project.id, name: 'staging', isDefault: false, serviceCount: 2 });
    const [dbCopy, webCopy] = cloned.services as Array<Service & { status: string; primaryUrl: string }>;
    expect([dbCopy!.slug, webCopy!.slug]).toEqual(['db', 'web']);
    expect(cloned.services.map((s: { status: string }) => s.status)).toEqual(['idle', 'idle']);
    expect(webCopy!.primaryUrl).toBe(`http://web-staging-${project.slug}.${ROOT_DOMAIN}:${httpPort}`);
    const apps = await ok(call('GET', `/api/environments/${staging.id}/apps`), 'apps');
    expect(apps.services.map((s: Service) => s.id)).toEqual([dbCopy!.id, webCopy!.id]);

    await deployed(dbCopy!);
    await deployed(webCopy!);
    // An empty database: the table is the clone's to make.
    expect((await call('POST', `/api/databases/${dbCopy!.id}/query`, { sql: 'SELECT marker FROM markers' })).status).toBe(400);
    await sql(dbCopy!.id, 'CREATE TABLE markers (marker text)');
    await sql(dbCopy!.id, "INSERT INTO markers VALUES ('staging')");

    // Side by side: each hostname answers from its own environment's database.
    const stagingHost = `web-staging-${project.slug}.${ROOT_DOMAIN}`;
    expect(await marker(stagingHost)).toEqual({ status: 200, text: 'staging' });
    expect(await marker(production)).toEqual({ status: 200, text: 'production' });

    // Each on its own network: production keeps the project's network, staging has its own, and
    // `db` resolves to each environment's own database container.
    const [prodWeb, prodDb, stagingWeb, stagingDb] = await Promise.all([web, db, webCopy!, dbCopy!].map((s) => containerOf(s.id)));
    const prodNet = `slipway-${project.id}`;
    const stagingNet = `slipway-${staging.id}`;
    expect(Object.keys(prodWeb!.networks)).toContain(prodNet);
    expect(Object.keys(prodWeb!.networks)).not.toContain(stagingNet);
    expect(Object.keys(stagingWeb!.networks)).toContain(stagingNet);
    expect(Object.keys(stagingWeb!.networks)).not.toContain(prodNet);
    expect(Object.keys(stagingDb!.networks)).toEqual([stagingNet]);
    expect(await resolveDbFrom(prodWeb!.name)).toBe(prodDb!.networks[prodNet]!.IPAddress);
    expect(await resolveDbFrom(stagingWeb!.name)).toBe(stagingDb!.networks[stagingNet]!.IPAddress);
    expect(prodDb!.networks[prodNet]!.IPAddress).not.toBe(stagingDb!.networks[stagingNet]!.IPAddress);

    // Deleting the clone removes its services, containers, volume and network; production serves on.
    const stagingContainers = () => docker('ps', '-a', '--filter', `label=slipway.environment=${staging.id}`, '--format', '{{.Names}}');
    expect((await stagingContainers()).split('\n').filter(Boolean).length).toBeGreaterThanOrEqual(2);
    const deleted = await ok(call('DELETE', `/api/environments/${staging.id}`), 'delete staging');
    expect(deleted).toMatchObject({ ok: true, proxy: { ok: true } });
    expect(await stagingContainers()).toBe('');
    expect(await docker('network', 'ls', '--filter', `name=^${stagingNet}$`, '--format', '{{.Name}}')).toBe('');
    expect(await docker('volume', 'ls', '-q', '--filter', `name=slipway-${dbCopy!.id}-data`)).toBe('');
    expect((await requestVia(httpPort, stagingHost, '/marker'))?.status).toBe(404);
    expect(await marker(production)).toEqual({ status: 200, text: 'production' });
    expect((await call('GET', `/api/services/${web.id}/overview`)).json.service.status).toBe('active');
    // The last environment stays.
    expect((await call('DELETE', `/api/environments/${project.id}`)).status).toBe(409);
  });
});
