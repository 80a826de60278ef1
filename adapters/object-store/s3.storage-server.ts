import type { StorageServer, StorageServerTarget } from '../../src/index.js';
import { bounded, describe, s3Client, s3Sdk } from './s3.object-store.js';

/** A storage instance's new server, through the AWS SDK: the bucket answers, made first when missing. */
export class S3StorageServer implements StorageServer {
  async ensureBucket(target: StorageServerTarget, signal: AbortSignal): Promise<string> {
    const { CreateBucketCommand, HeadBucketCommand } = await s3Sdk();
    const client = await s3Client({ ...target, endpoint: `http://${target.host}:${target.port}`, forcePathStyle: true });
    try {
      const head = () => client.send(new HeadBucketCommand({ Bucket: target.bucket }), { abortSignal: bounded(signal) });
      try {
        await head();
        return `bucket ${target.bucket} answers HeadBucket`;
      } catch (error) {
        if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode !== 404) throw error;
      }
      await client.send(new CreateBucketCommand({ Bucket: target.bucket }), { abortSignal: bounded(signal) });
      await head();
      return `bucket ${target.bucket} created (CreateBucket), and answers HeadBucket`;
    } catch (error) {
      throw describe(error, `bucket ${target.bucket}`);
    } finally {
      client.destroy();
    }
  }
}
