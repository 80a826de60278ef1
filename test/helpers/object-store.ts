import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
// @ts-expect-error s3rver ships no types
import S3rver from 's3rver';

/** A real S3-compatible server (s3rver) on 127.0.0.1, on a free port, with one bucket, for the AWS SDK to talk to. */
export interface TestObjectStore {
  endpoint: string;
  bucket: string;
  /** Where s3rver keeps the objects: `<dir>/<bucket>/<key>._S3rver_object`. */
  dir: string;
  /** The settings body of PUT /api/settings. */
  settings: { endpoint: string; region: string; bucket: string; accessKeyId: string; secretAccessKey: string; forcePathStyle: boolean };
  /** Stops answering (connections cut): the store is down. */
  stop(): Promise<void>;
  /** Answers again after stop, on the same address with the same objects: the store is back. */
  start(): Promise<void>;
  dispose(): Promise<void>;
}

export async function startObjectStore(bucket = 'slipway-backups'): Promise<TestObjectStore> {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-s3rver-'));
  let server = new S3rver({ port: 0, address: '127.0.0.1', directory: dir, silent: true, configureBuckets: [{ name: bucket }] });
  const address = (await server.run()) as AddressInfo;
  const endpoint = `http://127.0.0.1:${address.port}`;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    const http = (server as { httpServer: Server }).httpServer;
    const closed = server.close();
    http.closeAllConnections();
    await closed;
  };
  const start = async () => {
    if (!stopped) return;
    // The bucket is a directory of `dir` already: the new server serves what the old one stored.
    server = new S3rver({ port: address.port, address: '127.0.0.1', directory: dir, silent: true });
    await server.run();
    stopped = false;
  };
  return {
    endpoint,
    bucket,
    dir,
    // s3rver accepts its default key pair.
    settings: { endpoint, region: 'us-east-1', bucket, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', forcePathStyle: true },
    stop,
    start,
    async dispose() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
