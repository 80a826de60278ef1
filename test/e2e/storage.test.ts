import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../helpers/deployments.js';
import { containersWithLabel, docker, ownPortRange, provisionDocker } from '../helpers/docker.js';
import { expectErrorShape } from '../helpers/error-bodies.js';
import { getBytes, getText, listKeys, multipartUpload, presignedGet, putText, s3Client } from '../helpers/s3.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/*
 * Storage instances end to end, over real HTTP, on the real Docker engine: the storage server image
 * is the stand-in of test/provision/images.sh (`versity/versitygw:v1.8.0`: s3rver behind a front door
 * that checks SigV4 against the instance's key pair, run with versitygw's env, command and data
 * directory), reached with the AWS SDK from here through the instance's host port, and by name from
 * another container of the project. Then a PostgreSQL service (the stand-in's PostgreSQL 15) backs
 * up into the instance and is restored from it.
 */

type Call = ReturnType<typeof api>;
interface Storage {
  id: string;
  slug: string;
  status: string;
  hostPort: number;
  localUrl: string;
  s3: { bucket: string; region: string; accessKeyId: string; endpoint: string; publicEndpoint: string | null; forcePathStyle: true };
}

let server: ServerProcess;
let call: Call;
let projectId: string;
let storage: Storage;
let credentials: { accessKeyId: string; secretAccessKey: string };
let cloneCredentials: { accessKeyId: string; secretAccessKey: string };
let workerId: string;
const servers: ServerProcess[] = [];
const ENV = {
  BUILD_CONCURRENCY: '2',
  HEALTH_TIMEOUT_MS: '120000',
  STOP_GRACE_SECONDS: '5',
  WORKER_SETTLE_MS: '1500',
  // Host ports of their own, kept across the restarts below (outside the kernel's ephemeral range).
  HOST_PORT_RANGE: ownPortRange(),
};

beforeAll(async () => {
  await provisionDocker({ images: 'debian,node,postgres,storage' });
  server = await startServerProcess(ENV);
  servers.push(server);
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: `storage-${Date.now()}` })).json.project.id;
}, 15 * 60_000);

afterAll(async () => {
  if (projectId && call) {
    // Backups first: the instance holding them is not deleted before them.
    const { databases } = (await call('GET', '/api/databases')).json ?? { databases: [] };
    for (const db of databases ?? []) await call('DELETE', `/api/services/${db.id}`).catch(() => undefined);
    await call('DELETE', `/api/projects/${projectId}`).catch(() => undefined);
  }
  for (const s of servers.reverse()) await s.dispose();
});

function ok(res: { status: number; text: string }, label: string): void {
  expect(res.status, `${label}: ${res.text.slice(0, 500)}`).toBeLessThan(300);
}

/** The SDK from this machine, through the instance's host port (loopback). */
const client = () => s3Client(`http://127.0.0.1:${storage.hostPort}`, credentials);

async function until<T>(probe: () => Promise<T | null>, label: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => null);
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`${label}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/*
 * A worker that signs its own S3 requests (SigV4 in the Authorization header, node's crypto and http,
 * no SDK) from its env, which holds nothing but references to the storage instance: PUT an object,
 * GET one the test wrote and the one it wrote, then print what it got as one JSON line.
 */
const WORKER_SCRIPT = String.raw`
const http = require('node:http');
const { createHash, createHmac } = require('node:crypto');
const env = process.env;
const endpoint = new URL(env.AWS_ENDPOINT_URL_S3);
const sha = (data) => createHash('sha256').update(data).digest('hex');
const hmac = (key, data) => createHmac('sha256', key).update(data).digest();
function send(method, key, body) {
  const payload = Buffer.from(body || '');
  const date = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  const day = date.slice(0, 8);
  const path = '/' + env.BUCKET + '/' + key;
  const headers = { host: endpoint.host, 'x-amz-content-sha256': sha(payload), 'x-amz-date': date };
  const names = Object.keys(headers).sort();
  const canonical = [method, path, '', names.map((n) => n + ':' + headers[n] + '\n').join(''), names.join(';'), headers['x-amz-content-sha256']].join('\n');
  const scope = day + '/' + env.AWS_REGION + '/s3/aws4_request';
  const toSign = ['AWS4-HMAC-SHA256', date, scope, sha(canonical)].join('\n');
  const signingKey = hmac(hmac(hmac(hmac('AWS4' + env.AWS_SECRET_ACCESS_KEY, day), env.AWS_REGION), 's3'), 'aws4_request');
  const signature = createHmac('sha256', signingKey).update(toSign).digest('hex');
  headers.authorization = 'AWS4-HMAC-SHA256 Credential=' + env.AWS_ACCESS_KEY_ID + '/' + scope + ', SignedHeaders=' + names.join(';') + ', Signature=' + signature;
  headers['content-length'] = String(payload.length);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: endpoint.hostname, port: endpoint.port, method, path, headers, timeout: 10000 }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(payload);
  });
}
(async () => {
  const put = await send('PUT', 'from-worker.txt', 'written by the worker');
  const hello = await send('GET', 'docs/hello.txt');
  const back = await send('GET', 'from-worker.txt');
  console.log('S3-RESULT ' + JSON.stringify({ put: put.status, hello: hello.status, helloBody: hello.status === 200 ? hello.body : undefined, back: back.status, backBody: back.body }));
})().catch((e) => console.log('S3-RESULT ' + JSON.stringify({ error: String(e) })));
`;
const WORKER_COMMAND = `echo ${Buffer.from(WORKER_SCRIPT).toString('base64')} | base64 -d > /tmp/s3-call.js && node /tmp/s3-call.js; sleep 3600`;
const WORKER_ENV = [
  { key: 'AWS_ENDPOINT_URL_S3', value: '${files.AWS_ENDPOINT_URL_S3}' },
  { key: 'AWS_ACCESS_KEY_ID', value: '${files.AWS_ACCESS_KEY_ID}' },
  { key: 'AWS_SECRET_ACCESS_KEY', value: '${files.AWS_SECRET_ACCESS_KEY}' },
  { key: 'AWS_REGION', value: '${files.AWS_REGION}' },
  { key: 'BUCKET', value: '${files.BUCKET_NAME}' },
];

/** Deploys a worker running WORKER_SCRIPT and answers its deployment and the JSON line it printed. */
async function runWorker(serviceId: string): Promise<{ result: Awaited<ReturnType<typeof deploy>>; output: Record<string, unknown> }> {
  const result = await deploy(call, serviceId, 2 * 60_000);
  expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
  const line = await until(async () => {
    const text = await docker('logs', result.deployment.containerName!);
    return /^S3-RESULT (.*)$/m.exec(text)?.[1] ?? null;
  }, 'the worker called the instance');
  return { result, output: JSON.parse(line) };
}

describe('a storage instance', () => {
  it('is created with its key pair shown once, deployed, and ready once its bucket answers', { timeout: 5 * 60_000 }, async () => {
    const res = await call('POST', '/api/storage', { projectId, name: 'files' });
    expect(res.status, res.text).toBe(201);
    storage = res.json.storage;
    credentials = res.json.credentials;
    expect(storage.s3).toMatchObject({
      bucket: 'files',
      endpoint: 'http://files:7070',
      publicEndpoint: null,
      accessKeyId: credentials.accessKeyId,
    });
    const result = await deploy(call, storage.id, 4 * 60_000);
    expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
    const logs = result.logs.join('\n');
    expect(logs).toContain('Storage server ready: bucket files created (CreateBucket), and answers HeadBucket');
    expect(logs).not.toContain(credentials.secretAccessKey);
    storage = (await call('GET', `/api/storage/${storage.id}`)).json.storage;
    expect(storage).toMatchObject({ status: 'active', reachable: true, localUrl: `http://127.0.0.1:${storage.hostPort}` });
    // The container as the real image would run: its command, volume and env conventions.
    const { deployments } = (await call('GET', `/api/services/${storage.id}/deployments`)).json;
    const name = deployments[0].containerName as string;
    const inspected = JSON.parse(await docker('inspect', name))[0];
    expect(inspected.Config.Image).toMatch(/^slipway-/);
    expect(inspected.Config.Cmd).toEqual(['posix', '/data']);
    expect(inspected.Mounts).toEqual([
      expect.objectContaining({ Type: 'volume', Name: `slipway-${storage.id}-data`, Destination: '/data' }),
    ]);
    // The volume says whose it is, as the container does (it outlives every deployment: no deployment label).
    const volumeLabels = JSON.parse(await docker('volume', 'inspect', '--format', '{{json .Labels}}', `slipway-${storage.id}-data`));
    expect(volumeLabels).toMatchObject({ 'slipway.service': storage.id, 'slipway.instance': inspected.Config.Labels['slipway.instance'] });
    expect(volumeLabels['slipway.deployment']).toBeUndefined();
    expect(inspected.Config.Env).toEqual(expect.arrayContaining([`ROOT_ACCESS_KEY=${credentials.accessKeyId}`, 'VGW_PORT=:7070']));
  });

  it('works with the AWS SDK: put, get, list, multipart upload, presigned GET; the wrong secret is refused', {
    timeout: 2 * 60_000,
  }, async () => {
    const s3 = client();
    await putText(s3, 'files', 'docs/hello.txt', 'hello from the sdk');
    expect(await getText(s3, 'files', 'docs/hello.txt')).toBe('hello from the sdk');
    const sent = await multipartUpload(s3, 'files', 'big/three-parts.bin', 3);
    expect((await getBytes(s3, 'files', 'big/three-parts.bin')).equals(sent)).toBe(true);
    expect(await listKeys(s3, 'files')).toEqual(['big/three-parts.bin', 'docs/hello.txt']);
    expect(await listKeys(s3, 'files', 'docs/')).toEqual(['docs/hello.txt']);
    const url = await presignedGet(s3, 'files', 'docs/hello.txt');
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('hello from the sdk');
    expect((await fetch(`http://127.0.0.1:${storage.hostPort}/files/docs/hello.txt`)).status).toBe(403);
    const wrong = s3Client(`http://127.0.0.1:${storage.hostPort}`, { ...credentials, secretAccessKey: 'not-the-secret' });
    await expect(getText(wrong, 'files', 'docs/hello.txt')).rejects.toMatchObject({ $metadata: { httpStatusCode: 403 } });
  });

  it('is reached by name from a worker of its project whose variables are only ${files.KEY} references, with signed S3 calls', {
    timeout: 3 * 60_000,
  }, async () => {
    const res = await call('POST', `/api/projects/${projectId}/services`, {
      name: 'worker',
      repoUrl: 'container-image',
      containerImage: 'node:22-bookworm-slim',
      runtimeMode: 'worker',
      startCommand: WORKER_COMMAND,
      env: WORKER_ENV,
    });
    ok(res, 'worker');
    workerId = res.json.service.id;
    const variables = (await call('GET', `/api/services/${workerId}/variables`)).json.variables as Array<{
      key: string;
      value: string;
      resolvedValue: string;
    }>;
    expect(variables.map((v) => v.value).every((v) => /^\$\{files\.[A-Z0-9_]+\}$/.test(v))).toBe(true);
    expect(Object.fromEntries(variables.map((v) => [v.key, v.resolvedValue]))).toEqual({
      AWS_ENDPOINT_URL_S3: 'http://files:7070',
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: '',
      AWS_REGION: 'us-east-1',
      BUCKET: 'files',
    });
    const { result, output } = await runWorker(workerId);
    // PUT and GET signed with the instance's key pair (SigV4, Authorization header) by name on the project network.
    expect(output, JSON.stringify(output)).toEqual({
      put: 200,
      hello: 200,
      helloBody: 'hello from the sdk',
      back: 200,
      backBody: 'written by the worker',
    });
    expect(result.logs.join('\n')).not.toContain(credentials.secretAccessKey);
    expect(await getText(client(), 'files', 'from-worker.txt')).toBe('written by the worker');
  });

  it('cloned, the copy has its own key pair and an empty volume, and the worker copy reaches it with the same references', {
    timeout: 5 * 60_000,
  }, async () => {
    const res = await call('POST', `/api/environments/${projectId}/clone`, { name: 'staging' });
    expect(res.status, res.text).toBe(201);
    const copies = res.json.services as Array<{ id: string; slug: string }>;
    const filesCopy = copies.find((s) => s.slug === 'files')!;
    const workerCopy = copies.find((s) => s.slug === 'worker')!;
    expect(res.json.storageCredentials).toEqual([
      { storageId: filesCopy.id, accessKeyId: expect.stringMatching(/^SLW/), secretAccessKey: expect.any(String) },
    ]);
    cloneCredentials = res.json.storageCredentials[0];
    expect(cloneCredentials.accessKeyId).not.toBe(credentials.accessKeyId);
    const copied = await deploy(call, filesCopy.id, 4 * 60_000);
    expect(copied.deployment.status, copied.logs.join('\n')).toBe('succeeded');
    expect(copied.logs.join('\n')).toContain('Storage server ready: bucket files created (CreateBucket)');
    const { output } = await runWorker(workerCopy.id);
    // Its own instance: the object written in production is not there, the worker's own write is.
    expect(output, JSON.stringify(output)).toMatchObject({ put: 200, hello: 404, back: 200, backBody: 'written by the worker' });
    // Each key pair opens its own instance only.
    const copyPort = (await call('GET', `/api/storage/${filesCopy.id}`)).json.storage.hostPort;
    const productionKeysOnCopy = s3Client(`http://127.0.0.1:${copyPort}`, credentials);
    await expect(getText(productionKeysOnCopy, 'files', 'from-worker.txt')).rejects.toMatchObject({ $metadata: { httpStatusCode: 403 } });
    const copyKeysOnProduction = s3Client(`http://127.0.0.1:${storage.hostPort}`, cloneCredentials);
    await expect(getText(copyKeysOnProduction, 'files', 'docs/hello.txt')).rejects.toMatchObject({ $metadata: { httpStatusCode: 403 } });
    expect(await getText(s3Client(`http://127.0.0.1:${copyPort}`, cloneCredentials), 'files', 'from-worker.txt')).toBe(
      'written by the worker',
    );
    ok(await call('DELETE', `/api/environments/${res.json.environment.id}`), 'delete staging');
    expect(await containersWithLabel(`slipway.service=${filesCopy.id}`)).toEqual([]);
    ok(await call('DELETE', `/api/services/${workerId}`), 'delete worker');
  });

  it('stop keeps its objects and start serves them again; so does a redeploy', { timeout: 4 * 60_000 }, async () => {
    const stopped = await call('POST', `/api/storage/${storage.id}/stop`);
    ok(stopped, 'stop');
    expect(stopped.json.storage).toMatchObject({ status: 'stopped', reachable: false });
    await expect(getText(client(), 'files', 'docs/hello.txt')).rejects.toBeDefined();
    // Stopping a stopped instance changes nothing.
    expect((await call('POST', `/api/storage/${storage.id}/stop`)).json.storage.status).toBe('stopped');
    const started = await call('POST', `/api/storage/${storage.id}/start`);
    ok(started, 'start');
    expect(started.json.storage.status).toBe('active');
    expect(await until(() => getText(client(), 'files', 'docs/hello.txt'), 'served after start')).toBe('hello from the sdk');
    const result = await deploy(call, storage.id, 3 * 60_000);
    expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
    expect(result.logs.join('\n')).toContain('Storage server ready: bucket files answers HeadBucket');
    expect(await until(() => listKeys(client(), 'files'), 'served after redeploy')).toEqual([
      'big/three-parts.bin',
      'docs/hello.txt',
      'from-worker.txt',
    ]);
  });
});

describe('a storage instance as the backup destination of a PostgreSQL database', () => {
  let dbId: string;
  const sql = async (statement: string) => {
    const res = await call('POST', `/api/services/${dbId}/database/query`, { sql: statement });
    expect(res.status, `${statement}: ${res.text}`).toBe(200);
    return res.json.rows as Array<Record<string, unknown>>;
  };

  it('backs up into the bucket and restores from it', { timeout: 8 * 60_000 }, async () => {
    const created = await call('POST', '/api/databases', { projectId, name: 'ledger', engine: 'postgres' });
    expect(created.status, created.text).toBe(201);
    dbId = created.json.database.id;
    const result = await deploy(call, dbId, 5 * 60_000);
    expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
    await sql('CREATE TABLE entries (id serial PRIMARY KEY, note text NOT NULL, amount numeric(12,2))');
    await sql("INSERT INTO entries (note, amount) SELECT 'entry ' || g, g * 1.25 FROM generate_series(1, 500) g");
    const snapshot = await sql('SELECT id, note, amount::text AS amount FROM entries ORDER BY id');

    // Without a store the object storage has nowhere to go; with the instance named, it does, and says it is connected.
    const refused = await call('PUT', `/api/services/${dbId}/database/backups/settings`, { storage: 'object' });
    expectErrorShape(refused, 400, 'no object store');
    const settings = await call('PUT', `/api/services/${dbId}/database/backups/settings`, { storageId: storage.id, storage: 'object' });
    ok(settings, 'settings');
    expect(settings.json.settings).toMatchObject({ storageId: storage.id, storage: 'object' });
    const listed = (await call('GET', `/api/services/${dbId}/database/backups`)).json;
    expect(listed.objectStore).toEqual({ connected: true });

    const started = await call('POST', `/api/services/${dbId}/database/backups`, { storage: 'object' });
    expect(started.status, started.text).toBe(201);
    const backup = await until(
      async () => {
        const { backups } = (await call('GET', `/api/services/${dbId}/database/backups`)).json;
        const found = backups.find((b: { id: string }) => b.id === started.json.backup.id);
        return found && found.status !== 'running' ? found : null;
      },
      'the backup to end',
      120_000,
    );
    expect(backup, JSON.stringify(backup)).toMatchObject({
      status: 'succeeded',
      storage: 'object',
      storageId: storage.id,
      localPath: null,
    });
    // The object is in the instance's bucket, as the SDK lists it, with the size recorded.
    expect(await listKeys(client(), 'files', `backups/${dbId}/`)).toEqual([backup.objectKey]);
    expect((await getBytes(client(), 'files', backup.objectKey)).length).toBe(backup.sizeBytes);

    await sql("UPDATE entries SET note = 'changed' WHERE id <= 100");
    await sql('DELETE FROM entries WHERE id > 400');
    const restored = await call('POST', `/api/services/${dbId}/database/backups/${backup.id}/restore`);
    expect(restored.status, restored.text).toBe(200);
    expect(restored.json).toMatchObject({ ok: true, backup: { id: backup.id, status: 'succeeded' } });
    expect(await sql('SELECT id, note, amount::text AS amount FROM entries ORDER BY id')).toEqual(snapshot);
    const log = (await call('GET', `/api/services/${dbId}/database/backups/${backup.id}/logs`)).json.logs.map(
      (l: { line: string }) => l.line,
    );
    expect(log.join('\n')).toContain('Checksum verified');
    expect(log.join('\n')).toContain('from the object store');
  });

  it('keeps the instance while the database keeps backups in it', async () => {
    const refused = await call('DELETE', `/api/storage/${storage.id}`);
    expectErrorShape(refused, 409, 'delete a storage instance holding backups');
    expect(refused.json.details.serviceIds).toEqual([dbId]);
    expect((await call('GET', `/api/storage/${storage.id}`)).status).toBe(200);
  });
});

describe('secrets and deletion', () => {
  it('never shows the secret after the create answer: not in reads, logs, or the platform output', { timeout: 60_000 }, async () => {
    const reads = await Promise.all(
      [
        '/api/storage',
        `/api/storage/${storage.id}`,
        `/api/services/${storage.id}/overview`,
        `/api/services/${storage.id}/variables`,
        `/api/projects/${projectId}`,
        `/api/services/${storage.id}/deployments`,
      ].map((path) => call('GET', path)),
    );
    for (const res of reads) ok(res, 'read');
    const { deployments } = reads[5]!.json;
    const logs = await Promise.all(deployments.map((d: { id: string }) => call('GET', `/api/deployments/${d.id}/logs`)));
    const containers = await containersWithLabel(`slipway.service=${storage.id}`);
    const runtime = await Promise.all(containers.map((name) => docker('logs', name)));
    const everything = [...reads, ...logs].map((r) => r.text).join('\n') + runtime.join('\n') + server.output();
    expect(everything).toContain(credentials.accessKeyId);
    expect(everything).not.toContain(credentials.secretAccessKey);
    expect(everything).not.toContain(cloneCredentials.secretAccessKey);
  });

  it('delete removes its container and its volume', { timeout: 2 * 60_000 }, async () => {
    // The database (and its backups) go first: then nothing needs the instance.
    const { databases } = (await call('GET', '/api/databases')).json;
    for (const db of databases) ok(await call('DELETE', `/api/services/${db.id}`), 'delete database');
    expect(await containersWithLabel(`slipway.service=${storage.id}`)).toHaveLength(1);
    expect(await docker('volume', 'ls', '-q', '--filter', `name=slipway-${storage.id}-data`)).toBe(`slipway-${storage.id}-data`);
    const res = await call('DELETE', `/api/storage/${storage.id}`);
    ok(res, 'delete');
    expect(res.json.ok).toBe(true);
    expect(await containersWithLabel(`slipway.service=${storage.id}`)).toEqual([]);
    expect(await docker('volume', 'ls', '-q', '--filter', `name=slipway-${storage.id}-data`)).toBe('');
    expectErrorShape(await call('GET', `/api/storage/${storage.id}`), 404, 'deleted');
  });
});
