import { z } from 'zod';
import { serviceView } from '../projects/project-views.js';
import { storageCredentialsView } from '../storage/storage-views.js';

/** The wire shape of an environment, as the environment routes answer it. */
const timestamp = z.string().meta({ description: 'ISO 8601 UTC timestamp with milliseconds', example: '2026-11-27T12:00:00.000Z' });

export const environmentView = z
  .object({
    id: z.string(),
    projectId: z.string(),
    name: z
      .string()
      .meta({ description: 'Unique in the project; part of the generated hostnames of its services (`<service>-<name>-<project>`)' }),
    isDefault: z.boolean().meta({
      description: 'Where the detailed API creates services: the environment made with the project while it exists, else the oldest',
    }),
    serviceCount: z.number().int(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Environment' });
export type EnvironmentView = z.infer<typeof environmentView>;

export const clonedStorageCredentialsView = storageCredentialsView
  .extend({ storageId: z.string().meta({ description: 'The copy (a storage instance of the new environment) this key pair opens' }) })
  .meta({ id: 'ClonedStorageCredentials' });
export type ClonedStorageCredentialsView = z.infer<typeof clonedStorageCredentialsView>;

export const environmentCloneView = z.object({
  environment: environmentView,
  services: z.array(serviceView).meta({ description: 'The copies, in the order of the services they copy; none deployed yet' }),
  storageCredentials: z.array(clonedStorageCredentialsView).meta({
    description:
      "The new key pair of each storage instance copied (empty when none): shown in this answer only; the copy's services reach it through ${slug.KEY} references",
  }),
});
export type EnvironmentCloneView = z.infer<typeof environmentCloneView>;
