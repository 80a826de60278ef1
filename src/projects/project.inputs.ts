import { z } from 'zod';
import { DATABASE_ENGINES, type DatabaseEngine } from '../domain/database-engines.js';
import { GIT_URL, IMAGE_REF, REPO_FULL_NAME } from '../domain/validation.js';
import { MIN_MEMORY_MB } from '../domain/service-scale.js';
import { PLACEMENT_ROLES } from '../domain/service-placement.js';
import {
  line,
  nullableLine,
  nullableText,
  port,
  queryInt,
  runtimeMode,
  buildMethod,
  strictBoolean,
  strictInt,
  text,
} from '../platform/input-schemas.js';
import { deployTriggerInputs } from '../git-hooks/trigger-settings.js';
import { volumesInput } from '../volumes/volume.inputs.js';

/*
 * What creating and changing projects and services takes, declared once: the router adds the
 * path parameters, the use cases take the parsed types.
 */

export const projectInput = z.strictObject({ name: line(100).min(1), description: text(10_000).optional() });
export type ProjectInput = z.output<typeof projectInput>;

/** GET /api/projects pages: this many projects unless `limit` says otherwise, never more than the maximum. */
export const PROJECT_PAGE_DEFAULT = 100;
export const PROJECT_PAGE_MAX = 500;
export const projectPageInput = z.strictObject({
  limit: queryInt(1, PROJECT_PAGE_MAX)
    .optional()
    .meta({ description: `Projects per page: 1-${PROJECT_PAGE_MAX}, default ${PROJECT_PAGE_DEFAULT}` }),
  cursor: line(200).optional().meta({ description: "Where the page starts: the previous page's nextCursor; omitted for the first page" }),
});
export type ProjectPageInput = z.output<typeof projectPageInput>;

/** Renaming keeps the slug. */
export const projectPatchInput = projectInput.partial();
export type ProjectPatchInput = z.output<typeof projectPatchInput>;

export const envEntryInput = z.strictObject({ key: line(255), value: text(), secret: strictBoolean().optional() });
export type EnvEntryInput = z.output<typeof envEntryInput>;

const serviceName = line(100).min(1);

/** CPUs: a positive number of them, kept to the thousandth; null: none (a pipe: never coerced, see strictInt). */
const cpus = z
  .number()
  .min(0.001)
  .max(1024)
  .transform((value) => value)
  .nullable()
  .optional();
/** Megabytes, whole; a limit at least Docker's minimum. */
const megabytes = (min: number) => strictInt(min, 16_777_216).nullable().optional();

/** What each replica may use (limits) and is promised (reservations); a field left out stays as it is, null clears it. */
export const serviceResourcesInput = z
  .strictObject({
    cpuLimit: cpus.meta({ description: 'At most this many CPUs (0.5 is half of one); null: no limit' }),
    memoryLimitMb: megabytes(MIN_MEMORY_MB).meta({
      description: `At most this much memory, in MB (at least ${MIN_MEMORY_MB}); null: no limit`,
    }),
    cpuReservation: cpus.meta({ description: 'CPUs set aside on the server that runs it; null: none' }),
    memoryReservationMb: megabytes(1).meta({ description: 'Memory set aside on the server that runs it, in MB; null: none' }),
  })
  .meta({ id: 'ServiceResourcesInput' });
export type ServiceResourcesInput = z.output<typeof serviceResourcesInput>;
/** Node labels as servers carry them (PATCH /api/servers/{id} labels): at most 32. */
const placementLabels = z
  .record(
    z
      .string()
      .min(1)
      .max(64)
      .regex(/^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$/, 'lower-case letters, digits, dots, dashes and underscores'),
    z
      .string()
      .max(255)
      .regex(/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$|^$/, 'printable ASCII, no spaces at the ends'),
  )
  .refine((labels) => Object.keys(labels).length <= 32, 'at most 32 labels');

/** Where a stateless service's replicas may run on the cluster; null: anywhere. */
export const servicePlacementInput = z
  .strictObject({
    must: placementLabels
      .optional()
      .meta({ description: 'Labels a server must have (a label no server has is a 400 listing those that exist)' }),
    mustNot: placementLabels.optional().meta({ description: 'Labels a server must not have' }),
    role: z.enum(PLACEMENT_ROLES).nullable().optional().meta({ description: 'Only managers, or only workers; null: either' }),
  })
  .meta({ id: 'ServicePlacementInput' });
export type ServicePlacementInput = z.output<typeof servicePlacementInput>;

const REPO_URL_DESCRIPTION =
  'Credentials in the URL (https://user:token@host/...) are kept as the git token, encrypted, and removed from the URL (a 400 with gitToken as well)';

/** What a service is created with besides its name and source: the same for every source. */
const serviceSettings = {
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
  replicas: strictInt(0, 1000)
    .optional()
    .meta({ description: 'Copies that run (default 1; at most SERVICE_MAX_REPLICAS); 0 stops the service and keeps it' }),
  resources: serviceResourcesInput.optional(),
  placement: servicePlacementInput
    .nullable()
    .optional()
    .meta({ description: 'Where its replicas may run on the cluster (not databases or storage instances); null: anywhere' }),
  volumes: volumesInput
    .optional()
    .meta({ description: 'Named volumes, kept across deployments and backed up on their own; on update the list replaces the old one' }),
  ...deployTriggerInputs,
};

/**
 * The create-service input as the typed client sends it, each source field on its own. Which source
 * the fields name is one of serviceSources (sourceKindOf tells them apart), checked by the use case.
 */
export const createServiceInput = z.strictObject({
  name: serviceName,
  repoFullName: nullableLine(512),
  repoUrl: nullableLine(2048).meta({ description: REPO_URL_DESCRIPTION }),
  containerImage: nullableLine(512),
  ...serviceSettings,
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
  replicas: true,
  resources: true,
  placement: true,
  autoDeploy: true,
  watchPaths: true,
  pollIntervalSeconds: true,
  cancelInProgress: true,
  previews: true,
  volumes: true,
});
export type UpdateServiceInput = z.output<typeof updateServiceInput>;

const GIT_URL_MESSAGE = 'must be a remote Git URL (http, https, ssh or git), never a local path';
const gitUrl = line(2048).regex(GIT_URL, { message: GIT_URL_MESSAGE }).meta({ description: REPO_URL_DESCRIPTION });
/**
 * No value: null or "" (what a form sends for an empty field). A property whose type is null alone is
 * dropped by openapi-fetch's request body types (openapi-ts/openapi-typescript#2717), so "" stays too.
 */
const none = (message: string) => z.union([z.null(), z.literal('')], { error: message });
/** A source field only another kind of source takes: no value, or left out. */
const takenByOthers = (message: string) => none(message).optional();
const IMAGE_ONLY = 'only a container-image service (repoUrl "container-image") takes one';
const DATABASE_SOURCES = DATABASE_ENGINES.map((engine) => `database:${engine}` as const) as [
  `database:${DatabaseEngine}`,
  ...Array<`database:${DatabaseEngine}`>,
];

/**
 * Where a service comes from: exactly one of these (a storage instance has POST /api/storage). The
 * document shows them as a oneOf (createServiceBody), and the use case holds every body to the one its
 * markers name (sourceKindOf), so what the document accepts the server accepts, and the converse.
 */
export const serviceSources = {
  repository: z.strictObject({
    repoFullName: line(512).regex(REPO_FULL_NAME, { message: 'must be "<owner>/<repo>"' }),
    repoUrl: z.union([gitUrl, z.null(), z.literal('')], { error: GIT_URL_MESSAGE }).optional(),
    containerImage: takenByOthers(IMAGE_ONLY),
  }),
  gitUrl: z.strictObject({
    repoFullName: none('must be null (or "") for a repository given by its Git URL, or "<owner>/<repo>"'),
    repoUrl: gitUrl,
    containerImage: takenByOthers(IMAGE_ONLY),
  }),
  image: z.strictObject({
    repoUrl: z.literal('container-image'),
    containerImage: line(512).regex(IMAGE_REF, { message: 'not a valid image reference' }),
    repoFullName: takenByOthers('none for a container-image service (its answer says "image:<reference>")'),
  }),
  database: z.strictObject({
    repoUrl: z.literal('database'),
    repoFullName: z.enum(DATABASE_SOURCES, { error: `must be one of ${DATABASE_SOURCES.join(', ')}` }),
    containerImage: takenByOthers(IMAGE_ONLY),
  }),
};
export type ServiceSourceKind = keyof typeof serviceSources;
export type ServiceSourceInput<K extends ServiceSourceKind = ServiceSourceKind> = z.output<(typeof serviceSources)[K]>;

/**
 * The source the markers name: repoUrl "container-image" or "database", else a repository by its
 * owner/name (repoFullName given) or by its Git URL (repoUrl given); null when none is named.
 */
export function sourceKindOf(input: Pick<CreateServiceInput, 'repoFullName' | 'repoUrl'>): ServiceSourceKind | null {
  if (input.repoUrl === 'container-image') return 'image';
  if (input.repoUrl === 'database') return 'database';
  if (given(input.repoFullName)) return 'repository';
  if (given(input.repoUrl)) return 'gitUrl';
  return null;
}

const given = (value: string | null | undefined) => value !== null && value !== undefined && value !== '';

const withSource = <K extends ServiceSourceKind>(kind: K, title: string) =>
  z.strictObject({ name: serviceName, ...serviceSources[kind].shape, ...serviceSettings }).meta({ title });

/** The create-service body as documented: one source (a oneOf), with the name and settings every service takes. */
export const createServiceBody = z.xor([
  withSource('repository', 'A repository, by owner/name (repoUrl, when given, is where it is cloned from)'),
  withSource('gitUrl', 'A repository, by its Git URL (repoFullName null or "")'),
  withSource('image', 'A container image (repoUrl "container-image")'),
  withSource('database', 'A database (repoUrl "database", repoFullName "database:<engine>")'),
]);
