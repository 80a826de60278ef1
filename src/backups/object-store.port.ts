import type { Readable } from 'node:stream';

/** An S3-compatible bucket, as the platform settings name it (the secret decrypted). */
export interface ObjectStoreConfig {
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: boolean;
}

/** A bucket of an S3-compatible object store. Every call honours its signal and has a timeout. */
export interface ObjectStore {
  /** Resolves when the bucket answers (HeadBucket); rejects with why not. */
  check(signal: AbortSignal): Promise<void>;
  /** Streams `body` to `key` (multipart: a bounded number of parts in memory at once). */
  upload(key: string, body: Readable, signal: AbortSignal): Promise<void>;
  download(key: string, signal: AbortSignal): Promise<Readable>;
  /** A missing key is fine. */
  remove(key: string, signal: AbortSignal): Promise<void>;
}

export type ObjectStoreFactory = (config: ObjectStoreConfig) => ObjectStore;

/**
 * Where a backup's objects go: the storage instance `storageId` names, or with null the object store of
 * the platform settings; its secret decrypted; null when there is none.
 */
export interface ObjectStoreConfigs {
  configOf(storageId: string | null): Promise<ObjectStoreConfig | null>;
}
