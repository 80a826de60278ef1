import { z } from 'zod';
import { line, strictBoolean } from '../platform/input-schemas.js';
import { serviceView } from '../projects/project-views.js';

/*
 * A storage instance on the wire: the detailed API's Service (a storage instance is a service with
 * repoUrl `storage`), with how to reach its bucket. The secret is in the create answer only.
 */

/** A storage instance's key pair, in the answers that make one (create, and an environment's clone) and nowhere else. */
export const storageCredentialsView = z
  .object({
    accessKeyId: z.string(),
    secretAccessKey: z.string().meta({ description: 'Shown in this answer only: it is stored encrypted and never returned again' }),
  })
  .meta({ id: 'StorageCredentials' });

const storageS3View = z
  .object({
    bucket: z.string().meta({ description: 'The bucket made at start' }),
    region: z.string().meta({ description: 'The region to sign requests for (SigV4)' }),
    accessKeyId: z.string(),
    endpoint: z
      .string()
      .meta({ description: 'For the services of its project: http://<slug>:<internalPort>, by name on the project network' }),
    publicEndpoint: z
      .string()
      .nullable()
      .meta({ description: 'Through the proxy: its custom domain, or its generated hostname when publicEnabled; null when private' }),
    publicEnabled: z.boolean().meta({ description: 'The proxy routes its generated hostname (custom domains are routed either way)' }),
    forcePathStyle: z.literal(true).meta({ description: 'Buckets are addressed in the path (http://host/bucket/key), not as a subdomain' }),
  })
  .meta({ id: 'StorageS3' });

export const storageView = serviceView.extend({ s3: storageS3View }).meta({ id: 'StorageInstance' });
export type StorageView = z.infer<typeof storageView>;

export const storageCreatedView = z.object({ storage: storageView, credentials: storageCredentialsView });
export type StorageCreatedView = z.infer<typeof storageCreatedView>;

/** What creating a storage instance takes (the router adds the project). */
export const storageCreateInput = z.strictObject({
  name: line(100).min(1),
  bucket: line(63).optional().meta({ description: '3-63 lower-case letters, digits, dots and hyphens; default: the service slug' }),
  publicEnabled: strictBoolean()
    .optional()
    .meta({ description: 'Route its generated hostname through the proxy (default false: reachable by name inside its project only)' }),
});
export type StorageCreateInput = z.output<typeof storageCreateInput>;
