/** Where a storage instance's server answers, and with which key pair. */
export interface StorageServerTarget {
  host: string;
  port: number;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** The S3 calls a deployment makes to a storage instance's new server. Every call honours its signal. */
export interface StorageServer {
  /**
   * The readiness check: the bucket answers (HeadBucket), made first when missing (CreateBucket), so
   * a new instance starts with its bucket. Resolves with what passed; rejects with why not.
   */
  ensureBucket(target: StorageServerTarget, signal: AbortSignal): Promise<string>;
}
