import type { Placement } from './service-placement.js';
import type { DatabaseEngine } from './database-engines.js';
import type { DeploymentStatus } from './deployment-state.js';
import type { DeploymentOrigin, PreviewSettings } from './deploy-triggers.js';

/** Records as the services see them: plain data, no ORM. Timestamps are Date; the edge renders ISO strings. */
export const ACCESS_LEVELS = ['read', 'write'] as const;
export type Access = (typeof ACCESS_LEVELS)[number];
export const BUILD_METHODS = ['auto', 'dockerfile', 'analyzer'] as const;
export type BuildMethod = (typeof BUILD_METHODS)[number];
/** What `auto` resolved to at the last build. */
export const DETECTED_BUILD_METHODS = ['dockerfile', 'analyzer'] as const;
export type DetectedBuildMethod = (typeof DETECTED_BUILD_METHODS)[number];
export const RUNTIME_MODES = ['web', 'worker'] as const;
export type RuntimeMode = (typeof RUNTIME_MODES)[number];
export const PROJECT_STATUSES = ['idle', 'active'] as const;
export type ProjectStatus = (typeof PROJECT_STATUSES)[number];
/** `stopped`: a database or storage instance stopped through the API, its volume kept. */
export const SERVICE_STATUSES = ['idle', 'deploying', 'active', 'failed', 'stopped'] as const;
export type ServiceStatus = (typeof SERVICE_STATUSES)[number];
/** What the API shows: the stored status, or `unavailable` for a database whose server is `down` (issue 31). */
export const SERVICE_VIEW_STATUSES = [...SERVICE_STATUSES, 'unavailable'] as const;
export const LOG_STREAMS = ['stdout', 'stderr'] as const;
export type LogStream = (typeof LOG_STREAMS)[number];
export const DOMAIN_STATUSES = ['active'] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];
/** `push`: a git host's delivery; `poll`: branch or digest polling; `preview`: a pull request; `registry`: a registry's hook. */
export const DEPLOYMENT_TRIGGERS = ['manual', 'rollback', 'push', 'poll', 'preview', 'registry'] as const;
export type DeploymentTrigger = (typeof DEPLOYMENT_TRIGGERS)[number];

export interface ProjectRecord {
  id: string;
  name: string;
  slug: string;
  description: string;
  status: ProjectStatus;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * Where a service's container comes from. The wire spells it with placeholder strings (repoUrl
 * `container-image` / `database` / `storage`, repoFullName `image:<ref>` / `database:<engine>` /
 * `storage:s3`): those are
 * read once when a service is created and written once by the presenter, nowhere else.
 */
export type ServiceSource = RepositorySource | ImageSource | DatabaseSource | StorageSource;
export const SERVICE_SOURCE_KINDS = ['repository', 'image', 'database', 'storage'] as const;
export type ServiceSourceKind = (typeof SERVICE_SOURCE_KINDS)[number];

/** Built from `<owner>/<repo>` (on the configured git host) or a direct Git URL; at least one is set. */
export interface RepositorySource {
  kind: 'repository';
  repoFullName: string | null;
  /** Without credentials: a token given in the URL is kept as the service's git token. */
  repoUrl: string | null;
}

/** Where a repository is cloned from: its direct URL, else `<gitBaseUrl>/<owner>/<repo>.git`. */
export function cloneUrlOf(source: RepositorySource, gitBaseUrl: string): string {
  return source.repoUrl ?? `${gitBaseUrl}/${source.repoFullName}.git`;
}

/** Run from a pulled image. */
export interface ImageSource {
  kind: 'image';
  image: string;
}

/** One of the database engines, with what only databases have. */
export interface DatabaseSource {
  kind: 'database';
  engine: DatabaseEngine;
  publicEnabled: boolean;
  publicHostname: string | null;
  /** postgres and timescale only: starts the server with wal_level=logical. */
  logicalReplicationEnabled: boolean;
}

/**
 * An S3-compatible object store the platform runs (src/domain/storage-server.ts): one bucket, one
 * generated key pair. The secret is shown once, when the instance is made, and kept only encrypted:
 * it is not a variable of the service, so no env listing, reference or reveal can show it.
 */
export interface StorageSource {
  kind: 'storage';
  bucket: string;
  accessKeyId: string;
  secretAccessKeyEncrypted: string;
  /** Its generated hostname is routed by the proxy; custom domains are routed either way. */
  publicEnabled: boolean;
}

export interface ServiceRecord {
  id: string;
  projectId: string;
  /** The project's environment it lives in (src/domain/environments.ts). */
  environmentId: string;
  name: string;
  slug: string;
  source: ServiceSource;
  branch: string;
  rootDir: string | null;
  gitTokenEncrypted: string | null;
  installCommand: string | null;
  buildCommand: string | null;
  startCommand: string | null;
  staticOutput: string | null;
  buildMethod: BuildMethod;
  dockerfilePath: string | null;
  detectedBuildMethod: DetectedBuildMethod | null;
  runtimeMode: RuntimeMode;
  internalPort: number;
  hostPort: number;
  /** Copies that run (0: stopped and kept) and what each may use (service-scale.ts). */
  replicas: number;
  cpuLimitMillis: number | null;
  memoryLimitMb: number | null;
  cpuReservationMillis: number | null;
  memoryReservationMb: number | null;
  /** Where its replicas may run on the cluster (service-placement.ts); null: anywhere. */
  placement: Placement | null;
  status: ServiceStatus;
  reachable: boolean;
  preferredDomain: string | null;
  framework: string | null;
  lastDeployedAt: Date | null;
  /** A push to `branch` (or a new digest of the image) deploys it: on by default for repository and image services. */
  autoDeploy: boolean;
  /** Globs over the repository's paths: a push touching none of them does not deploy it; empty: every push does. */
  watchPaths: string[];
  /** Branch (or digest) polling, for a server no webhook reaches; null: off. */
  pollIntervalSeconds: number | null;
  /** A newer push stops the build under way instead of letting it finish. */
  cancelInProgress: boolean;
  /** Pull-request previews; null: the defaults (off). */
  previews: PreviewSettings | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface EnvVarRecord {
  id: string;
  serviceId: string;
  key: string;
  valueEncrypted: string;
  /** Secret values are never shown in responses (generated passwords are secret). */
  secret: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface DomainRecord {
  id: string;
  serviceId: string;
  hostname: string;
  status: DomainStatus;
  createdAt: Date;
  updatedAt: Date;
}

export interface DeploymentRecord {
  id: string;
  serviceId: string;
  commitSha: string | null;
  status: DeploymentStatus;
  trigger: DeploymentTrigger;
  imageTag: string | null;
  containerName: string | null;
  /** A rollback: the deployment whose image this one runs again (no build). */
  rollbackOf: string | null;
  /** Set by abort while running: the runner watches it and stops the work. */
  abortRequested: boolean;
  /** A push, poll, preview or registry deployment: the commit's message and author, the sender, the delivery. */
  origin: DeploymentOrigin | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  createdAt: Date;
}

export interface DeploymentLogRecord {
  id: number;
  deploymentId: string;
  line: string;
  stream: LogStream;
  createdAt: Date;
}

export interface ApiKeyRecord {
  id: string;
  name: string;
  access: Access;
  /** null means all projects. */
  projectIds: string[] | null;
  prefix: string;
  tokenHash: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}
