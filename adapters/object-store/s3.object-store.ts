import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type { ObjectStore, ObjectStoreConfig } from '../../src/index.js';

const CALL_TIMEOUT_MS = 30_000;
/** 8 MiB parts, two in flight: the upload holds at most ~16 MiB, whatever the backup's size. */
const PART_SIZE = 8 * 1024 * 1024;
const QUEUE_SIZE = 2;

/**
 * The AWS SDK, loaded on first use: it is the largest dependency (some 15 MB of heap), and an install
 * that never backs up to an object store or runs a storage instance never needs it.
 */
export const s3Sdk = () => import('@aws-sdk/client-s3');

/** A bucket of an S3-compatible store through the AWS SDK (AWS, MinIO, R2, s3rver...). */
export class S3ObjectStore implements ObjectStore {
  private clientOnce: Promise<S3Client> | undefined;

  constructor(private readonly config: ObjectStoreConfig) {}

  private client(): Promise<S3Client> {
    this.clientOnce ??= s3Client(this.config);
    return this.clientOnce;
  }

  async check(signal: AbortSignal): Promise<void> {
    try {
      const { HeadBucketCommand } = await s3Sdk();
      await (await this.client()).send(new HeadBucketCommand({ Bucket: this.config.bucket }), { abortSignal: bounded(signal) });
    } catch (error) {
      throw describe(error, `bucket ${this.config.bucket}`);
    }
  }

  async upload(key: string, body: Readable, signal: AbortSignal): Promise<void> {
    const client = await this.client();
    const { Upload } = await import('@aws-sdk/lib-storage');
    const upload = new Upload({
      client,
      params: { Bucket: this.config.bucket, Key: key, Body: body, ContentType: 'application/octet-stream' },
      partSize: PART_SIZE,
      queueSize: QUEUE_SIZE,
      leavePartsOnError: false,
    });
    const onAbort = () => void upload.abort().catch(() => undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await upload.done();
    } catch (error) {
      // The body is no longer read: end it, so the dump writing into it stops too.
      body.destroy();
      throw describe(error, `upload of ${key}`);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  async download(key: string, signal: AbortSignal): Promise<Readable> {
    try {
      const { GetObjectCommand } = await s3Sdk();
      const out = await (await this.client()).send(new GetObjectCommand({ Bucket: this.config.bucket, Key: key }), { abortSignal: signal });
      if (!(out.Body instanceof Readable)) throw new Error('the object store answered without a body');
      return out.Body;
    } catch (error) {
      throw describe(error, `download of ${key}`);
    }
  }

  async remove(key: string, signal: AbortSignal): Promise<void> {
    try {
      const { DeleteObjectCommand } = await s3Sdk();
      await (await this.client()).send(new DeleteObjectCommand({ Bucket: this.config.bucket, Key: key }), { abortSignal: bounded(signal) });
    } catch (error) {
      throw describe(error, `removal of ${key}`);
    }
  }
}

/** One client per bucket configuration; the platform's own calls to any S3-compatible server go through it. */
export async function s3Client(config: Omit<ObjectStoreConfig, 'bucket'>): Promise<S3Client> {
  const { S3Client } = await s3Sdk();
  return new S3Client({
    endpoint: config.endpoint,
    region: config.region,
    forcePathStyle: config.forcePathStyle,
    credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey },
    maxAttempts: 2,
    // Checksums on every request: the SDK's default, which not every S3-compatible server accepts.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

export function bounded(signal: AbortSignal): AbortSignal {
  return AbortSignal.any([signal, AbortSignal.timeout(CALL_TIMEOUT_MS)]);
}

/** The SDK's errors name little (`UnknownError`, `ECONNREFUSED`): say what failed and why. */
export function describe(error: unknown, what: string): Error {
  const e = error as { name?: string; message?: string; code?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  const detail = [e.code, e.name !== 'Error' ? e.name : undefined, e.message].filter(Boolean).join(': ') || 'unknown error';
  return new Error(`object store ${what} failed${status ? ` (HTTP ${status})` : ''}: ${detail}`);
}
