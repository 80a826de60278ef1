import { execFile } from 'node:child_process';
import { Agent } from 'node:http';
import { promisify } from 'node:util';
import type { S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestVia, startCaddy, type CaddyProcess } from '../helpers/caddy.js';
import { deploy } from '../helpers/deployments.js';
import { ownPortRange, provisionDocker } from '../helpers/docker.js';
import { getText, listKeys, putText, s3Client } from '../helpers/s3.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/*
 * A storage instance with `publicEnabled`, reached from outside through a real Caddy (Debian's package) at
 * its generated hostname with the AWS SDK, as a client on the internet would: the request goes to Caddy's
 * port with the hostname in Host (a DNS answer is stood in by the agent's lookup), signed for that host.
 * A private instance's hostname is not routed. The server image is the storage stand-in (test/provision/images.sh).
 */

const ROOT_DOMAIN = 'apps.test';
let caddy: CaddyProcess;
let server: ServerProcess;
let call: ReturnType<typeof api>;
let projectId: string;

/** The SDK as a client of the public hostname: every connection goes to Caddy on this machine. */
function publicClient(endpoint: string, credentials: { accessKeyId: string; secretAccessKey: string }): S3Client {
  const agent = new Agent({
    lookup: (_host, options, callback) => {
      if ((options as { all?: boolean }).all)
        (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
      else callback(null, '127.0.0.1', 4);
    },
  });
  return s3Client(endpoint, credentials, 'us-east-1', { httpAgent: agent, connectionTimeout: 5_000, requestTimeout: 10_000 });
}

async function until<T>(probe: () => Promise<T>, label: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      return await probe();
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`${label}: not within ${timeoutMs} ms (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

beforeAll(async () => {
  await provisionDocker({ images: 'storage' });
  await promisify(execFile)('bash', ['test/provision/caddy.sh']);
  caddy = await startCaddy();
  server = await startServerProcess({
    ...caddy.platformEnv,
    ROOT_DOMAIN,
    BUILD_CONCURRENCY: '2',
    STOP_GRACE_SECONDS: '2',
    HEALTH_TIMEOUT_MS: '120000',
    HOST_PORT_RANGE: ownPortRange(),
  });
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: 'pub' })).json.project.id;
}, 15 * 60_000);

afterAll(async () => {
  try {
    if (call && projectId) await call('DELETE', `/api/projects/${projectId}`).catch(() => undefined);
  } finally {
    await server?.dispose();
    await caddy?.stop();
  }
});

describe('a public storage instance', () => {
  it('is reached through the proxy at its generated hostname with the AWS SDK; a private one is not routed', {
    timeout: 6 * 60_000,
  }, async () => {
    const made = await call('POST', '/api/storage', { projectId, name: 'media', publicEnabled: true });
    expect(made.status, made.text).toBe(201);
    const { storage, credentials } = made.json;
    const hostname = `${storage.slug}-pub.${ROOT_DOMAIN}`;
    // The proxy's port is in it when it is not 80.
    expect(storage.s3.publicEndpoint).toBe(`http://${hostname}:${caddy.httpPort}`);
    const priv = await call('POST', '/api/storage', { projectId, name: 'vault' });
    expect(priv.status, priv.text).toBe(201);
    expect(priv.json.storage.s3.publicEndpoint).toBeNull();

    for (const id of [storage.id, priv.json.storage.id]) {
      const result = await deploy(call, id, 4 * 60_000);
      expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
    }

    const client = publicClient(storage.s3.publicEndpoint, credentials);
    await until(() => putText(client, storage.s3.bucket, 'public/hello.txt', 'through the proxy'), 'a PUT through Caddy');
    expect(await getText(client, storage.s3.bucket, 'public/hello.txt')).toBe('through the proxy');
    expect(await listKeys(client, storage.s3.bucket, 'public/')).toEqual(['public/hello.txt']);
    // The proxy passes the request as signed: a wrong secret is refused by the server behind it.
    const wrong = publicClient(storage.s3.publicEndpoint, { ...credentials, secretAccessKey: 'x'.repeat(40) });
    await expect(getText(wrong, storage.s3.bucket, 'public/hello.txt')).rejects.toMatchObject({ $metadata: { httpStatusCode: 403 } });
    client.destroy();
    wrong.destroy();

    // The private instance has no generated route: Caddy does not send its hostname anywhere.
    const privateHost = `${priv.json.storage.slug}-pub.${ROOT_DOMAIN}`;
    const answer = await requestVia(caddy.httpPort, privateHost, `/${priv.json.storage.s3.bucket}`);
    expect(answer, 'no answer from Caddy').not.toBeNull();
    expect(answer!.status, answer!.text).toBe(404);
    expect(answer!.text).not.toMatch(/ListBucketResult|AccessDenied|SignatureDoesNotMatch/);
  });
});
