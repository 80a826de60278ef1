import { Readable } from 'node:stream';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';

/**
 * An AWS SDK client for a storage instance (or its stand-in): path-style addressing, and checksums only
 * where S3 requires them (the stand-in cannot read the SDK's default aws-chunked trailers; see
 * test/standins/s3-server/README.md).
 */
export function s3Client(
  endpoint: string,
  credentials: { accessKeyId: string; secretAccessKey: string },
  region = 'us-east-1',
  requestHandler?: S3ClientConfig['requestHandler'],
): S3Client {
  return new S3Client({
    ...(requestHandler ? { requestHandler } : {}),
    endpoint,
    region,
    forcePathStyle: true,
    credentials,
    maxAttempts: 1,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

export async function putText(client: S3Client, bucket: string, key: string, text: string): Promise<void> {
  await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: text, ContentType: 'text/plain' }));
}

export async function getText(client: S3Client, bucket: string, key: string): Promise<string> {
  const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return out.Body!.transformToString();
}

export async function listKeys(client: S3Client, bucket: string, prefix?: string): Promise<string[]> {
  const out = await client.send(new ListObjectsV2Command({ Bucket: bucket, ...(prefix ? { Prefix: prefix } : {}) }));
  return (out.Contents ?? []).map((o) => o.Key!).sort();
}

/** A multipart upload of `parts` parts of 5 MiB (S3's smallest part), each filled with its own byte; resolves with the bytes sent. */
export async function multipartUpload(client: S3Client, bucket: string, key: string, parts = 3): Promise<Buffer> {
  const part = 5 * 1024 * 1024;
  const body = Buffer.concat(Array.from({ length: parts }, (_, i) => Buffer.alloc(part, 65 + i)));
  const upload = new Upload({
    client,
    params: { Bucket: bucket, Key: key, Body: Readable.from([body]) },
    partSize: part,
    queueSize: 2,
    leavePartsOnError: false,
  });
  await upload.done();
  return body;
}

export async function getBytes(client: S3Client, bucket: string, key: string): Promise<Buffer> {
  const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return Buffer.from(await out.Body!.transformToByteArray());
}

/** A presigned GET valid for `expiresIn` seconds from `signingDate` (now unless given). */
export function presignedGet(client: S3Client, bucket: string, key: string, expiresIn = 300, signingDate?: Date): Promise<string> {
  return getSignedUrl(client, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn, ...(signingDate ? { signingDate } : {}) });
}
