import { ValidationError } from './errors.js';
import type { ServiceRecord, ServiceSource, StorageSource } from './types.js';

/**
 * The server a storage instance runs: Versity S3 Gateway over its data volume (docs/decisions.md
 * says why). Its conventions, which the test stand-in honours too: the root key pair in
 * ROOT_ACCESS_KEY / ROOT_SECRET_KEY, the listen address in VGW_PORT, the region in VGW_REGION, and
 * the command `posix <dir>` (the backend and the directory it serves, one bucket per directory).
 */
export const STORAGE_SERVER = {
  image: 'versity/versitygw:v1.8.0',
  internalPort: 7070,
  dataDir: '/data',
  region: 'us-east-1',
  command: ['posix', '/data'] as readonly string[],
  /** The container's env: the key pair and where to listen. */
  env(credentials: { accessKeyId: string; secretAccessKey: string }, port: number): Record<string, string> {
    return {
      ROOT_ACCESS_KEY: credentials.accessKeyId,
      ROOT_SECRET_KEY: credentials.secretAccessKey,
      VGW_PORT: `:${port}`,
      VGW_REGION: STORAGE_SERVER.region,
    };
  },
} as const;

/**
 * The variables a storage instance offers the services of its environment as `${<slug>.KEY}`: the
 * names the AWS SDKs and CLI read on their own (endpoint, key pair, region) and the bucket under
 * Fly.io's name for it (docs/decisions.md). Derived from the instance's row when variables are
 * resolved, never stored, so a clone's references resolve to the clone's own keys.
 */
export const STORAGE_VARIABLES = {
  AWS_ENDPOINT_URL_S3: 'endpoint',
  AWS_ACCESS_KEY_ID: 'access key id',
  AWS_SECRET_ACCESS_KEY: 'secret access key',
  AWS_REGION: 'region',
  BUCKET_NAME: 'bucket',
} as const;
export type StorageVariable = keyof typeof STORAGE_VARIABLES;

/** The one of them that is secret: masked wherever a secret is, and never resolved where a secret could be read back. */
const STORAGE_SECRET_VARIABLE: StorageVariable = 'AWS_SECRET_ACCESS_KEY';

/** Where the services of its environment reach it: by slug on their network. */
export function storageEndpoint(service: Pick<ServiceRecord, 'slug' | 'internalPort'>): string {
  return `http://${service.slug}:${service.internalPort}`;
}

/** A storage instance's derived variables, from its settings and its decrypted secret. */
export function storageVariables(
  service: Pick<ServiceRecord, 'slug' | 'internalPort'>,
  storage: StorageSource,
  secretAccessKey: string,
): Array<{ key: StorageVariable; value: string; secret: boolean }> {
  const values: Record<StorageVariable, string> = {
    AWS_ENDPOINT_URL_S3: storageEndpoint(service),
    AWS_ACCESS_KEY_ID: storage.accessKeyId,
    AWS_SECRET_ACCESS_KEY: secretAccessKey,
    AWS_REGION: STORAGE_SERVER.region,
    BUCKET_NAME: storage.bucket,
  };
  return Object.entries(values).map(([key, value]) => ({
    key: key as StorageVariable,
    value,
    secret: key === STORAGE_SECRET_VARIABLE,
  }));
}

/** Whether `key` names one of the service's derived variables (a storage instance's). */
export function derivesVariable(service: { source: ServiceSource }, key: string): boolean {
  return service.source.kind === 'storage' && Object.hasOwn(STORAGE_VARIABLES, key);
}

/** Refuses a variable of a storage instance named like one it derives: the derived one wins, so the stored one would only mislead. */
export function assertNotStorageVariable(service: { source: ServiceSource; slug: string }, key: string, field = 'key'): void {
  if (!derivesVariable(service, key)) return;
  throw new ValidationError(
    field,
    `${key} is the storage instance's own, derived from it: the services of its environment reference it as \${${service.slug}.${key}}, and it cannot be set`,
  );
}

/** The storage settings of a storage instance, null for any other service. */
export function storageOf(service: { source: ServiceSource }): StorageSource | null {
  return service.source.kind === 'storage' ? service.source : null;
}

/** Databases and storage instances keep their data in a volume that outlives every deployment. */
export function keepsData(service: { source: ServiceSource }): boolean {
  return service.source.kind === 'database' || service.source.kind === 'storage';
}

/**
 * Whether the proxy routes a service's generated hostname: web services do; databases never (they
 * have their own public hostname); a storage instance only when made public.
 */
export function routesGeneratedHostname(service: Pick<ServiceRecord, 'runtimeMode' | 'source'>): boolean {
  if (service.runtimeMode !== 'web') return false;
  if (service.source.kind === 'database') return false;
  return service.source.kind !== 'storage' || service.source.publicEnabled;
}

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** S3's bucket naming rules: 3-63 lower-case letters, digits, dots and hyphens, no `..`, not an IP address. */
export function assertBucketName(name: string, field = 'bucket'): string {
  if (!BUCKET.test(name) || name.includes('..') || name.includes('.-') || name.includes('-.') || /^\d+\.\d+\.\d+\.\d+$/.test(name)) {
    throw new ValidationError(
      field,
      `${JSON.stringify(name)} is not a valid bucket name: 3 to 63 lower-case letters, digits, dots and hyphens, starting and ending with a letter or digit`,
    );
  }
  return name;
}

/** The bucket a storage instance gets when none is named: its slug, made long enough. */
export function defaultBucketName(slug: string): string {
  const base = slug.length >= 3 ? slug : `${slug}-bucket`;
  return base.slice(0, 63).replace(/[-.]+$/, '');
}
