import { z } from 'zod';
import { line, nullableLine, nullableText, port, runtimeMode, buildMethod, strictBoolean, text } from '../platform/input-schemas.js';

/*
 * What creating and changing projects and services takes, declared once: the router adds the
 * path parameters, the use cases take the parsed types.
 */

export const projectInput = z.strictObject({ name: line(100).min(1), description: text(10_000).optional() });
export type ProjectInput = z.output<typeof projectInput>;

/** Renaming keeps the slug. */
export const projectPatchInput = projectInput.partial();
export type ProjectPatchInput = z.output<typeof projectPatchInput>;

export const envEntryInput = z.strictObject({ key: line(255), value: text(), secret: strictBoolean().optional() });
export type EnvEntryInput = z.output<typeof envEntryInput>;

export const createServiceInput = z.strictObject({
  name: line(100).min(1),
  repoFullName: nullableLine(512),
  repoUrl: nullableLine(2048).meta({
    description: 'Credentials in the URL (https://user:token@host/...) are kept as the git token, encrypted, and removed from the URL',
  }),
  containerImage: nullableLine(512),
  branch: line(255).min(1).optional(),
  rootDir: nullableLine(1024),
  gitToken: nullableLine().meta({ description: 'Write-only: a token for private repositories; never returned (see hasGitToken)' }),
  installCommand: nullableText(),
  buildCommand: nullableText(),
  startCommand: nullableText(),
  staticOutput: nullableLine(1024),
  buildMethod: buildMethod.optional(),
  dockerfilePath: nullableLine(1024),
  runtimeMode: runtimeMode.optional(),
  internalPort: port.optional(),
  env: z.array(envEntryInput).max(500).optional(),
  databasePublicEnabled: strictBoolean().optional(),
  databasePublicHostname: nullableLine(253),
  postgresLogicalReplicationEnabled: strictBoolean().optional(),
});
export type CreateServiceInput = z.output<typeof createServiceInput>;

/** PATCH takes the build and run settings of creation, each optional. */
export const updateServiceInput = createServiceInput.pick({
  branch: true,
  rootDir: true,
  gitToken: true,
  installCommand: true,
  buildCommand: true,
  startCommand: true,
  staticOutput: true,
  buildMethod: true,
  dockerfilePath: true,
  runtimeMode: true,
  internalPort: true,
});
export type UpdateServiceInput = z.output<typeof updateServiceInput>;
