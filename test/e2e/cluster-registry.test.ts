import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { provisionDocker } from '../helpers/docker.js';
import { sharedTestCluster, type TestCluster } from '../helpers/test-cluster.js';

/**
 * The cluster's image registry (issue 31; docs/cluster-findings.md, item 2) on the run's shared test
 * cluster: the `registry:2` stand-in (Debian's Distribution registry) on the manager, with htpasswd
 * authentication and TLS from a CA made here, which every node trusts through its own
 * /etc/docker/certs.d/<address:port>/ca.crt. A push from the manager's engine, a pull by digest on a
 * worker (a service created with the manager's credentials, as the platform will), refusals without
 * credentials, and a garbage collection after a manifest delete.
 */
const run = promisify(execFile);
const tag = randomBytes(3).toString('hex');
const user = 'slipway';
const password = randomBytes(18).toString('base64url');
let cluster: TestCluster & { release(): void };
let pki: string;
let registry: string; // address:port
let port: number;
const container = `slipway-registry-${tag}`;
const volume = `slipway-registry-${tag}`;
const service = `pull-${tag}`;
/** Docker CLI configuration directories: one holding the registry's credentials, one empty. */
let withCredentials: string;
let withoutCredentials: string;

const openssl = (...args: string[]) => run('openssl', args, { cwd: pki });
const cli = (config: string, node: string, ...args: string[]) =>
  run('docker', ['--config', config, '-H', `unix://${cluster.node(node).socket}`, ...args], {
    maxBuffer: 16 * 1024 * 1024,
    timeout: 120_000,
  });
const errorOf = async (promise: Promise<unknown>) => {
  try {
    await promise;
    return '';
  } catch (error) {
    return String((error as { stderr?: string }).stderr ?? error);
  }
};

/** HTTPS to the registry trusting only our CA; `auth` false sends no credentials. */
function registryCall(method: string, urlPath: string, auth: boolean | string = true, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
    const credentials = auth === true ? `${user}:${password}` : typeof auth === 'string' ? auth : null;
    const [host, p] = registry.split(':');
    const req = request(
      {
        host,
        port: Number(p),
        method,
        path: urlPath,
        ca: readFileSync(path.join(pki, 'ca.crt')),
        headers: { ...headers, ...(credentials ? { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` } : {}) },
        timeout: 10_000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,registry' });
  const { runId, ownerPid } = inject('slipwayClusterRun');
  cluster = await sharedTestCluster(runId, ownerPid);
  await Promise.all([cluster.loadImages(['registry:2'], ['m']), cluster.loadImages(['busybox:1'])]);
  port = 15_000 + Math.floor(Math.random() * 5_000);
  registry = `${cluster.manager.address}:${port}`;

  // The CA, the registry's certificate (its address as the SAN) and the htpasswd line (bcrypt: the only
  // form Distribution accepts; libxcrypt's crypt(3) through Debian's perl makes it).
  pki = mkdtempSync(path.join(tmpdir(), 'slipway-registry-pki-'));
  await openssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=Slipway test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  await openssl(
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'registry.key',
    '-out',
    'registry.csr',
    '-subj',
    '/CN=slipway-registry',
  );
  writeFileSync(
    path.join(pki, 'ext.cnf'),
    `subjectAltName=IP:${cluster.manager.address}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n`,
  );
  await openssl(
    'x509',
    '-req',
    '-in',
    'registry.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'registry.crt',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
  );
  const alphabet = './ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  // `--` ends perl's switches: a random password may start with '-'.
  const salt = Array.from(randomBytes(22), (b) => alphabet[b % 64]).join('');
  const { stdout: hash } = await run('perl', ['-e', 'print crypt($ARGV[0], q($2b$10$) . $ARGV[1])', '--', password, salt]);
  expect(hash).toMatch(/^\$2b\$10\$/);
  writeFileSync(path.join(pki, 'htpasswd'), `${user}:${hash}\n`);
  // The registry runs as root in the image: the key is read through the bind mount.
  await cluster.docker(
    'm',
    'run',
    '-d',
    '--name',
    container,
    '-p',
    `${registry}:5000`,
    '-v',
    `${volume}:/var/lib/registry`,
    '-v',
    `${pki}:/certs:ro`,
    '-e',
    'REGISTRY_AUTH=htpasswd',
    '-e',
    'REGISTRY_AUTH_HTPASSWD_REALM=slipway',
    '-e',
    'REGISTRY_AUTH_HTPASSWD_PATH=/certs/htpasswd',
    '-e',
    'REGISTRY_HTTP_TLS_CERTIFICATE=/certs/registry.crt',
    '-e',
    'REGISTRY_HTTP_TLS_KEY=/certs/registry.key',
    '-e',
    'REGISTRY_STORAGE_DELETE_ENABLED=true',
    'registry:2',
  );
  // Every node trusts the CA for this registry only, as the join will set it up.
  for (const node of cluster.nodes) {
    const dir = path.join(path.dirname(node.socket), 'etc', 'certs.d', registry);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'ca.crt'), readFileSync(path.join(pki, 'ca.crt')));
  }
  withCredentials = mkdtempSync(path.join(tmpdir(), 'slipway-docker-config-'));
  withoutCredentials = mkdtempSync(path.join(tmpdir(), 'slipway-docker-config-'));
  writeFileSync(
    path.join(withCredentials, 'config.json'),
    JSON.stringify({ auths: { [registry]: { auth: Buffer.from(`${user}:${password}`).toString('base64') } } }),
  );
  writeFileSync(path.join(withoutCredentials, 'config.json'), '{}');
  const started = Date.now();
  while ((await registryCall('GET', '/v2/', false).catch(() => ({ status: 0 }))).status !== 401) {
    if (Date.now() - started > 30_000) throw new Error('the registry did not answer within 30 s');
    await new Promise((r) => setTimeout(r, 200));
  }
}, 15 * 60_000);

afterAll(async () => {
  if (!cluster) return;
  try {
    await cluster.docker('m', 'service', 'rm', service).catch(() => {});
    await cluster.docker('m', 'rm', '-f', '-v', container).catch(() => {});
    await cluster.docker('m', 'volume', 'rm', volume).catch(() => {});
    for (const node of cluster.nodes) {
      rmSync(path.join(path.dirname(node.socket), 'etc', 'certs.d', registry), { recursive: true, force: true });
      const images = await cluster.docker(node.name, 'images', '--format', '{{.ID}}', `${registry}/slipway/app`).catch(() => '');
      for (const id of new Set(images.split('\n').filter(Boolean))) await cluster.docker(node.name, 'rmi', '-f', id).catch(() => {});
    }
    for (const dir of [pki, withCredentials, withoutCredentials]) if (dir) rmSync(dir, { recursive: true, force: true });
  } finally {
    // The next file on the shared cluster may start.
    cluster.release();
  }
}, 120_000);

it('serves TLS from our CA only, and refuses requests without valid credentials', async () => {
  expect((await registryCall('GET', '/v2/', false)).status).toBe(401);
  expect((await registryCall('GET', '/v2/', `${user}:wrong-${password}`)).status).toBe(401);
  expect((await registryCall('GET', '/v2/')).status).toBe(200);
  // Without our CA, the handshake fails: the registry is never trusted by accident.
  const untrusted = await new Promise<string>((resolve) => {
    const [host, p] = registry.split(':');
    const req = request({ host, port: Number(p), path: '/v2/', timeout: 10_000 }, () => resolve('answered'));
    req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    req.end();
  });
  expect(untrusted).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|UNABLE_TO_GET_ISSUER/);
});

let v1: string; // repository@sha256:... of the first push
let v2Digest: string;

it('takes a push from the manager engine with credentials, and refuses it without', async () => {
  const context = mkdtempSync(path.join(tmpdir(), 'slipway-registry-app-'));
  try {
    for (const version of ['v1', 'v2']) {
      // v2 carries a 1 MB layer of its own, for the garbage collection below to find.
      const extra = version === 'v2' ? 'RUN head -c 1000000 /dev/urandom > /blob\n' : '';
      writeFileSync(
        path.join(context, 'Dockerfile'),
        `FROM busybox:1\nRUN echo ${version}-${tag} > /version\n${extra}CMD ["cat", "/version"]\n`,
      );
      await cli(withCredentials, 'm', 'build', '-q', '-t', `${registry}/slipway/app:${version}`, context);
    }
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
  expect(await errorOf(cli(withoutCredentials, 'm', 'push', `${registry}/slipway/app:v1`))).toMatch(/no basic auth credentials/);
  await cli(withCredentials, 'm', 'push', `${registry}/slipway/app:v1`);
  await cli(withCredentials, 'm', 'push', `${registry}/slipway/app:v2`);
  v1 = (
    await cli(withCredentials, 'm', 'image', 'inspect', '--format', '{{index .RepoDigests 0}}', `${registry}/slipway/app:v1`)
  ).stdout.trim();
  expect(v1).toMatch(new RegExp(`^${registry.replace(/\./g, '\\.')}/slipway/app@sha256:[0-9a-f]{64}$`));
  expect(JSON.parse((await registryCall('GET', '/v2/slipway/app/tags/list')).body).tags.sort()).toEqual(['v1', 'v2']);
}, 180_000);

it('is pulled by digest on a worker: refused without credentials, run as a service with the manager’s', async () => {
  const worker = cluster.workers[0]!.name;
  expect(await errorOf(cli(withoutCredentials, worker, 'pull', v1))).toMatch(/no basic auth credentials/);
  // As the platform will: the service names the image by digest, the credentials go with the task (X-Registry-Auth).
  await cli(
    withCredentials,
    'm',
    'service',
    'create',
    '--detach',
    '--quiet',
    '--name',
    service,
    '--with-registry-auth',
    '--constraint',
    `node.hostname==${worker}`,
    '--restart-condition',
    'none',
    v1,
  );
  const started = Date.now();
  let state = '';
  while (!/^(Complete|Failed|Rejected)/.test(state)) {
    if (Date.now() - started > 120_000) throw new Error(`the task did not end within 120 s (${state})`);
    await new Promise((r) => setTimeout(r, 500));
    state = await cluster.docker('m', 'service', 'ps', service, '--format', '{{.CurrentState}} {{.Error}}');
  }
  expect(state).toMatch(/^Complete/);
  expect(await cluster.docker(worker, 'image', 'ls', '--digests', '--format', '{{.Repository}}@{{.Digest}}')).toContain(v1);
  expect(await cluster.docker('m', 'service', 'logs', '--raw', service)).toBe(`v1-${tag}`);
}, 180_000);

it('drops a deleted manifest’s blobs at garbage collection and keeps the others', async () => {
  const accept = { accept: 'application/vnd.docker.distribution.manifest.v2+json' };
  /** A manifest's digest and the blobs it names (config and layers). */
  const manifest = async (reference: string) => {
    const got = await registryCall('GET', `/v2/slipway/app/manifests/${reference}`, true, accept);
    expect(got.status).toBe(200);
    const body = JSON.parse(got.body) as { config: { digest: string }; layers: Array<{ digest: string }> };
    return { digest: String(got.headers['docker-content-digest']), blobs: [body.config.digest, ...body.layers.map((l) => l.digest)] };
  };
  const kept = await manifest('v1');
  const dropped = await manifest('v2');
  v2Digest = dropped.digest;
  expect(v2Digest).toMatch(/^sha256:/);
  expect((await registryCall('DELETE', `/v2/slipway/app/manifests/${v2Digest}`, false)).status).toBe(401);
  expect((await registryCall('DELETE', `/v2/slipway/app/manifests/${v2Digest}`)).status).toBe(202);
  expect(JSON.parse((await registryCall('GET', '/v2/slipway/app/tags/list')).body).tags).toEqual(['v1']);
  /** The blobs in the registry's storage (manifests are blobs too), read off the volume. */
  const blobs = async () =>
    new Set(
      (
        await cluster.docker(
          'm',
          'run',
          '--rm',
          '-v',
          `${volume}:/var/lib/registry`,
          '--entrypoint',
          'find',
          'registry:2',
          '/var/lib/registry/docker/registry/v2/blobs',
          '-name',
          'data',
        )
      )
        .split('\n')
        .filter(Boolean)
        .map((file) => `sha256:${file.split('/').at(-2)}`),
    );
  // Collection with no push running: the registry is stopped for it.
  await cluster.docker('m', 'stop', container);
  const before = await blobs();
  const gc = await cluster.docker(
    'm',
    'run',
    '--rm',
    '-v',
    `${volume}:/var/lib/registry`,
    'registry:2',
    'garbage-collect',
    '--delete-untagged',
    '/etc/docker/registry/config.yml',
  );
  await cluster.docker('m', 'start', container);
  const after = await blobs();
  console.log(`registry garbage-collect: ${before.size} blobs before, ${after.size} after`);
  expect(gc).toContain('blob eligible for deletion');
  // Gone: v2's manifest and the blobs only it named. Kept: v1's manifest and every blob it names (the shared base layer too).
  const onlyV2 = [dropped.digest, ...dropped.blobs.filter((b) => !kept.blobs.includes(b))];
  expect([...before].filter((b) => !after.has(b)).sort()).toEqual(onlyV2.sort());
  for (const blob of [kept.digest, ...kept.blobs]) expect(after.has(blob)).toBe(true);
  const started = Date.now();
  while ((await registryCall('GET', '/v2/').catch(() => ({ status: 0 }))).status !== 200) {
    if (Date.now() - started > 30_000) throw new Error('the registry did not come back within 30 s');
    await new Promise((r) => setTimeout(r, 200));
  }
  expect((await registryCall('GET', `/v2/slipway/app/manifests/${v2Digest}`, true, accept)).status).toBe(404);
  expect((await registryCall('GET', `/v2/slipway/app/manifests/${kept.digest}`, true, accept)).status).toBe(200);
}, 180_000);
