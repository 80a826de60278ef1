import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, HeadBucketCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getBytes, getText, listKeys, multipartUpload, presignedGet, putText, s3Client } from '../helpers/s3.js';
import { parseArgs, type StandinServer, startServer } from '../standins/s3-server/server.mjs';

/*
 * The storage server's stand-in (test/standins/s3-server): s3rver behind a front door that takes
 * versitygw's command line and env and checks every request's SigV4 signature against the one key
 * pair. Driven by the AWS SDK, as the platform and the e2e tests drive the image built from it.
 */

const KEYS = { accessKeyId: 'SLWTESTKEY0000000001', secretAccessKey: 'test-secret/with+odd=chars' };
const BUCKET = 'standin-bucket';
let dir: string;
let server: StandinServer;
let endpoint: string;
const lines: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'slipway-s3-standin-'));
  server = await startServer({ port: 0, host: '127.0.0.1', dir, ...KEYS, health: '/health', log: (line) => lines.push(line) });
  endpoint = `http://127.0.0.1:${server.port}`;
  await s3Client(endpoint, KEYS).send(new CreateBucketCommand({ Bucket: BUCKET }));
});

afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the versitygw stand-in', () => {
  it('serves the AWS SDK with the right key pair: put, get, list, multipart, presigned GET', async () => {
    const client = s3Client(endpoint, KEYS);
    await putText(client, BUCKET, 'docs/a b+c&d.txt', 'hello');
    expect(await getText(client, BUCKET, 'docs/a b+c&d.txt')).toBe('hello');
    const sent = await multipartUpload(client, BUCKET, 'big/file.bin', 2);
    expect((await getBytes(client, BUCKET, 'big/file.bin')).equals(sent)).toBe(true);
    expect(await listKeys(client, BUCKET)).toEqual(['big/file.bin', 'docs/a b+c&d.txt']);
    expect(await listKeys(client, BUCKET, 'docs/')).toEqual(['docs/a b+c&d.txt']);
    const url = await presignedGet(client, BUCKET, 'docs/a b+c&d.txt');
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('hello');
  });

  it('refuses a wrong secret, an unknown key, another region and anonymous requests, as S3 does', async () => {
    const refusal = async (client: ReturnType<typeof s3Client>) =>
      client.send(new HeadBucketCommand({ Bucket: BUCKET })).then(
        () => 'answered',
        (e: { $metadata?: { httpStatusCode?: number } }) => e.$metadata?.httpStatusCode,
      );
    expect(await refusal(s3Client(endpoint, { ...KEYS, secretAccessKey: 'not-the-secret' }))).toBe(403);
    expect(await refusal(s3Client(endpoint, { ...KEYS, accessKeyId: 'SLWSOMEONEELSE000000' }))).toBe(403);
    expect(await refusal(s3Client(endpoint, KEYS, 'eu-west-1'))).toBe(400);
    const anonymous = await fetch(`${endpoint}/${BUCKET}/docs/a%20b%2Bc%26d.txt`);
    expect(anonymous.status).toBe(403);
    expect(await anonymous.text()).toContain('<Code>AccessDenied</Code>');
    const wrongSecret = await fetch(await presignedGet(s3Client(endpoint, { ...KEYS, secretAccessKey: 'nope' }), BUCKET, 'docs/x'));
    expect(wrongSecret.status).toBe(403);
    expect(await wrongSecret.text()).toContain('SignatureDoesNotMatch');
  });

  it('refuses a presigned URL that was changed or has expired', async () => {
    const client = s3Client(endpoint, KEYS);
    await putText(client, BUCKET, 'one.txt', '1');
    await putText(client, BUCKET, 'two.txt', '2');
    const url = await presignedGet(client, BUCKET, 'one.txt', 60);
    expect((await fetch(url.replace('/one.txt', '/two.txt'))).status).toBe(403);
    // Signed correctly, a minute ago, for one second: refused for its age, not its signature.
    const expired = await fetch(await presignedGet(client, BUCKET, 'one.txt', 1, new Date(Date.now() - 60_000)));
    expect(expired.status).toBe(403);
    expect(await expired.text()).toContain('Request has expired');
  });

  it('answers its health path without a signature, and logs requests without their query (no credential)', async () => {
    expect((await fetch(`${endpoint}/health`)).status).toBe(200);
    expect(lines.length).toBeGreaterThan(5);
    expect(lines.join('\n')).not.toContain(KEYS.secretAccessKey);
    expect(lines.join('\n')).not.toContain('X-Amz-Signature');
  });

  it("takes versitygw's command line and env, and refuses what it does not honour", () => {
    const env = { ROOT_ACCESS_KEY: 'AK', ROOT_SECRET_KEY: 'SK', VGW_PORT: ':9000', VGW_REGION: 'auto' };
    expect(parseArgs(['posix', '/data'], env)).toMatchObject({
      host: '0.0.0.0',
      port: 9000,
      dir: '/data',
      access: 'AK',
      secret: 'SK',
      region: 'auto',
    });
    expect(parseArgs(['--port', '127.0.0.1:7071', '-a', 'A2', '--secret=S2', 'posix', '/srv'], env)).toMatchObject({
      host: '127.0.0.1',
      port: 7071,
      access: 'A2',
      secret: 'S2',
      dir: '/srv',
    });
    expect(parseArgs(['posix', '/data'], { ROOT_ACCESS_KEY_ID: 'A3', ROOT_SECRET_ACCESS_KEY: 'S3' })).toMatchObject({
      port: 7070,
      access: 'A3',
    });
    expect(() => parseArgs(['posix', '/data'], {})).toThrow('root user access and secret key must be provided');
    expect(() => parseArgs(['s3', '/data'], env)).toThrow(/only posix/);
    expect(() => parseArgs(['--iam-dir', '/x', 'posix', '/data'], env)).toThrow(/--iam-dir is not supported/);
    expect(() => parseArgs(['posix'], env)).toThrow(/directory/);
  });
});
