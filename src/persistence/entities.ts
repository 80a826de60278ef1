import type { Placement } from '../domain/service-placement.js';
import { defineEntity, p } from '@mikro-orm/core';
import { DATA_SAFETY_ENTITIES } from './data-safety-entities.js';
import { type Row, type Same, same } from './row-types.js';
export type { Row } from './row-types.js';
import { CLUSTER_ENTITIES } from './cluster-entities.js';
import { EVENT_ENTITIES } from './event-entities.js';
import type {
  BackupFormat,
  BackupLogRecord,
  BackupRecord,
  BackupSettingsRecord,
  BackupStatus,
  BackupStorage,
  BackupTrigger,
  BackupKind,
  DrillFrequency,
  DrillStatus,
  SchedulePeriod,
  VolumeMode,
} from '../backups/backup.records.js';
import type { BackupScheduleRecord } from '../backups/backup-schedule.records.js';
import type { PasswordResetRecord, PersonalTokenRecord, SessionRecord, UserRecord } from '../domain/accounts.js';

import type { DatabaseEngine } from '../domain/database-engines.js';
import type { EnvironmentRecord } from '../domain/environments.js';
import type { DeploymentOrigin, PreviewSettings } from '../domain/deploy-triggers.js';
import type {
  CommitStatusRecord,
  DeliveryOutcome,
  ProjectWebhookRecord,
  ServicePollRecord,
  WebhookDeliveryRecord,
} from '../git-hooks/git-hook.records.js';
import type { PreviewDatabase, PreviewPhase, PreviewRecord, PreviewService, PreviewStatus } from '../previews/preview.records.js';
import type { CommitState } from '../git-hooks/git-provider.port.js';
import type { DatabaseImportLogRecord, DatabaseImportRecord, ImportSource, ImportStatus } from '../domain/database-imports.js';
import type { Role, Scope } from '../domain/scopes.js';
import type { DeploymentStatus } from '../domain/deployment-state.js';
import type {
  Access,
  ApiKeyRecord,
  BuildMethod,
  DatabaseSource,
  DeploymentLogRecord,
  DeploymentRecord,
  DeploymentTrigger,
  DetectedBuildMethod,
  DomainRecord,
  DomainStatus,
  EnvVarRecord,
  LogStream,
  ProjectRecord,
  ProjectStatus,
  RepositorySource,
  RuntimeMode,
  ServiceRecord,
  ServiceSourceKind,
  ServiceStatus,
  StorageSource,
} from '../domain/types.js';

/*
 * Each table is declared once, with defineEntity: the row type is inferred from the columns, and
 * checked below against the domain record it stores (a column missing, extra or of another type
 * fails the build). No classes, no decorators, so tsx and vitest (esbuild) load them as they are.
 * Foreign keys are plain columns with indexes; deletes cascade in ServiceRemoval, inside one
 * transaction, so SQLite and PostgreSQL behave the same.
 */

const id = () => p.string().length(32).primary();
const fk = () => p.string().length(32).index();
const str = (length = 255) => p.string().length(length);
const nullableStr = (length = 255) => p.string().length(length).strictNullable();
const nullableText = () => p.text().strictNullable();
const nullableDate = () => p.datetime().strictNullable();

export const Project = defineEntity({
  name: 'Project',
  tableName: 'projects',
  properties: {
    id: id(),
    name: str(),
    slug: str(64).unique(),
    description: p.text(),
    status: str(16).$type<ProjectStatus>(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});

/** A project's environments (src/domain/environments.ts); names are unique within the project. */
export const Environment = defineEntity({
  name: 'Environment',
  tableName: 'environments',
  uniques: [{ properties: ['projectId', 'name'] }],
  properties: {
    id: id(),
    projectId: fk(),
    name: str(32),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});

export const Service = defineEntity({
  name: 'Service',
  tableName: 'services',
  // Slugs are names on the environment's network and in `${slug.KEY}`: unique within the environment.
  uniques: [{ properties: ['environmentId', 'slug'] }],
  properties: {
    id: id(),
    projectId: fk(),
    environmentId: fk(),
    name: str(),
    slug: str(64),
    // What the service runs: `repository` (repoFullName and/or repoUrl), `image` (containerImage),
    // `database` (its row in service_databases) or `storage` (its row in service_storages).
    source: str(16).$type<ServiceSourceKind>(),
    repoFullName: nullableStr(512),
    repoUrl: nullableText(),
    containerImage: nullableStr(512),
    branch: str(),
    rootDir: nullableStr(1024),
    gitTokenEncrypted: nullableText(),
    installCommand: nullableText(),
    buildCommand: nullableText(),
    startCommand: nullableText(),
    staticOutput: nullableStr(1024),
    buildMethod: str(16).$type<BuildMethod>(),
    dockerfilePath: nullableStr(1024),
    detectedBuildMethod: nullableStr(16).$type<DetectedBuildMethod | null>(),
    runtimeMode: str(16).$type<RuntimeMode>(),
    internalPort: p.integer(),
    // Unique: a host port is never handed to two services at once.
    hostPort: p.integer().unique(),
    // Replicas and resources (src/domain/service-scale.ts): CPUs in thousandths, memory in MB.
    replicas: p.integer().default(1),
    cpuLimitMillis: p.integer().strictNullable(),
    memoryLimitMb: p.integer().strictNullable(),
    cpuReservationMillis: p.integer().strictNullable(),
    memoryReservationMb: p.integer().strictNullable(),
    // Where its replicas may run on the cluster (src/domain/service-placement.ts); null: anywhere.
    placement: p.json<Placement>().strictNullable(),
    status: str(16).$type<ServiceStatus>(),
    reachable: p.boolean(),
    preferredDomain: nullableStr(253),
    framework: nullableStr(64),
    lastDeployedAt: nullableDate(),
    // What deploys it besides a person (src/domain/deploy-triggers.ts, docs/push-to-deploy.md).
    autoDeploy: p.boolean().default(true),
    watchPaths: p.json<string[]>().default('[]'),
    pollIntervalSeconds: p.integer().strictNullable(),
    cancelInProgress: p.boolean().default(false),
    previews: p.json<PreviewSettings>().strictNullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});

/** What only database services have, one row per database service. */
export const ServiceDatabase = defineEntity({
  name: 'ServiceDatabase',
  tableName: 'service_databases',
  properties: {
    serviceId: p.string().length(32).primary(),
    engine: str(16).$type<DatabaseEngine>(),
    publicEnabled: p.boolean(),
    publicHostname: nullableStr(253),
    logicalReplicationEnabled: p.boolean(),
  },
});

/** What only storage instances have, one row per storage instance; the secret is sealed by the SecretBox. */
export const ServiceStorage = defineEntity({
  name: 'ServiceStorage',
  tableName: 'service_storages',
  properties: {
    serviceId: p.string().length(32).primary(),
    bucket: str(63),
    accessKeyId: str(128),
    secretAccessKeyEncrypted: p.text(),
    publicEnabled: p.boolean(),
  },
});

export const EnvVar = defineEntity({
  name: 'EnvVar',
  tableName: 'env_vars',
  uniques: [{ properties: ['serviceId', 'key'] }],
  properties: {
    id: id(),
    serviceId: fk(),
    key: str(),
    valueEncrypted: p.text(),
    secret: p.boolean(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});

export const Domain = defineEntity({
  name: 'Domain',
  tableName: 'domains',
  properties: {
    id: id(),
    serviceId: fk(),
    // Unique across the platform: one hostname routes to one service.
    hostname: str(253).unique(),
    status: str(16).$type<DomainStatus>(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});

export const Deployment = defineEntity({
  name: 'Deployment',
  tableName: 'deployments',
  indexes: [{ properties: ['status', 'createdAt'] }],
  properties: {
    id: id(),
    serviceId: fk(),
    commitSha: nullableStr(64),
    status: str(16).$type<DeploymentStatus>(),
    trigger: str(16).$type<DeploymentTrigger>(),
    imageTag: nullableStr(255),
    containerName: nullableStr(255),
    rollbackOf: nullableStr(32),
    abortRequested: p.boolean(),
    origin: p.json<DeploymentOrigin>().strictNullable(),
    startedAt: nullableDate(),
    finishedAt: nullableDate(),
    createdAt: p.datetime(),
  },
});

export const DeploymentLog = defineEntity({
  name: 'DeploymentLog',
  tableName: 'deployment_logs',
  properties: {
    id: p.integer().primary().autoincrement(),
    deploymentId: fk(),
    line: p.text(),
    stream: str(8).$type<LogStream>(),
    createdAt: p.datetime(),
  },
});

export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: id(),
    name: str(),
    access: str(8).$type<Access>(),
    projectIds: p.json<string[]>().strictNullable(),
    prefix: str(16),
    tokenHash: str(64).unique(),
    createdAt: p.datetime(),
    lastUsedAt: nullableDate(),
  },
});

export const User = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: id(),
    email: str(320).unique(),
    name: str(),
    passwordHash: str(255),
    role: str(16).$type<Role>(),
    totpSecretEncrypted: nullableText(),
    totpEnabled: p.boolean(),
    totpLastStep: p.integer().strictNullable(),
    recoveryCodeHashes: p.json<string[]>(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});

export const UserSession = defineEntity({
  name: 'UserSession',
  tableName: 'user_sessions',
  properties: {
    id: id(),
    userId: fk(),
    tokenHash: str(64).unique(),
    expiresAt: p.datetime(),
    createdAt: p.datetime(),
    lastUsedAt: p.datetime(),
  },
});

export const PersonalToken = defineEntity({
  name: 'PersonalToken',
  tableName: 'personal_tokens',
  properties: {
    id: id(),
    userId: fk(),
    name: str(),
    scopes: p.json<Scope[]>(),
    prefix: str(24),
    tokenHash: str(64).unique(),
    expiresAt: nullableDate(),
    createdAt: p.datetime(),
    lastUsedAt: nullableDate(),
  },
});

export const PasswordReset = defineEntity({
  name: 'PasswordReset',
  tableName: 'password_resets',
  properties: {
    id: id(),
    userId: fk(),
    tokenHash: str(64).unique(),
    expiresAt: p.datetime(),
    usedAt: nullableDate(),
    createdAt: p.datetime(),
  },
});

/** Platform-wide settings, one JSON value per key. */
export const Setting = defineEntity({
  name: 'Setting',
  tableName: 'settings',
  properties: {
    key: p.string().length(64).primary(),
    value: p.text(),
    updatedAt: p.datetime(),
  },
});

/**
 * A service's resource use over one minute (the sampler's ticks, downsampled): averages of the
 * gauges, sums of the counters' growth. Kept for METRICS_RETENTION_HOURS; writes do not change the store's version.
 */
export const MetricSample = defineEntity({
  name: 'MetricSample',
  tableName: 'metric_samples',
  indexes: [{ properties: ['serviceId', 'at'] }, { properties: ['at'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    serviceId: p.string().length(32),
    /** Start of the minute. */
    at: p.datetime(),
    cpuPercent: p.double().$type<number>().runtimeType('number'),
    memoryUsedBytes: p.bigint('number'),
    memoryLimitBytes: p.bigint('number'),
    netRxBytes: p.bigint('number'),
    netTxBytes: p.bigint('number'),
    blockReadBytes: p.bigint('number'),
    blockWriteBytes: p.bigint('number'),
    restarts: p.integer(),
    /** Requests the proxy answered for the service's hostnames, and how many with a 5xx. */
    requests: p.integer().default(0),
    errors5xx: p.integer().default(0),
  },
});

/**
 * The authentication endpoints' counters, kept where every platform process sees them: hits of a
 * key (a SHA-256 of what is counted and for whom: an address, never in clear) in one window (its
 * start in epoch milliseconds: a hit's own millisecond for a sliding minute, or a fixed minute's start). Rows are written with one
 * upsert each (see AuthLimitRepository); old windows are pruned. Writes do not change the store's version.
 */
export const AuthRateHit = defineEntity({
  name: 'AuthRateHit',
  tableName: 'auth_rate_hits',
  indexes: [{ properties: ['windowStart'] }],
  properties: {
    counterKey: p.string().length(64).primary(),
    windowStart: p.bigint('number').primary(),
    hits: p.integer(),
  },
});

/**
 * An account's run of failed sign-ins (or second-factor codes), keyed by a SHA-256 of the normalized
 * email (or `2fa:<user>`), whether or not the account exists: epoch milliseconds until which further
 * attempts are refused, and of the last failure (a run untouched for a day is pruned).
 */
export const SigninBackoffEntry = defineEntity({
  name: 'SigninBackoffEntry',
  tableName: 'signin_backoffs',
  indexes: [{ properties: ['lastFailureMs'] }],
  properties: {
    accountKey: p.string().length(64).primary(),
    failures: p.integer(),
    untilMs: p.bigint('number'),
    lastFailureMs: p.bigint('number'),
  },
});

/** Data imports into database services; the source's URL is not a column: only its label is. */
export const DatabaseImport = defineEntity({
  name: 'DatabaseImport',
  tableName: 'database_imports',
  indexes: [{ properties: ['status'] }],
  properties: {
    id: id(),
    serviceId: fk(),
    engine: str(16).$type<DatabaseEngine>(),
    source: str(16).$type<ImportSource>(),
    sourceLabel: str(512),
    status: str(16).$type<ImportStatus>(),
    error: nullableText(),
    createdAt: p.datetime(),
    startedAt: nullableDate(),
    finishedAt: nullableDate(),
  },
});

export const DatabaseImportLog = defineEntity({
  name: 'DatabaseImportLog',
  tableName: 'database_import_logs',
  properties: {
    id: p.integer().primary().autoincrement(),
    importId: fk(),
    line: p.text(),
    stream: str(8).$type<LogStream>(),
    createdAt: p.datetime(),
  },
});

/** A database backup; the table is also the backup job queue. */
export const Backup = defineEntity({
  name: 'Backup',
  tableName: 'backups',
  indexes: [{ properties: ['status', 'createdAt'] }, { properties: ['serviceId', 'createdAt'] }],
  properties: {
    id: id(),
    serviceId: p.string().length(32),
    // '': a volume backup of a service that is not a database (the column predates volume backups).
    engine: str(16).$type<DatabaseEngine | ''>(),
    status: str(16).$type<BackupStatus>(),
    trigger: str(16).$type<BackupTrigger>(),
    storage: str(16).$type<BackupStorage>(),
    format: str(16).$type<BackupFormat>(),
    localPath: nullableStr(1024),
    objectKey: nullableStr(1024),
    // The storage instance objectKey is in; null: the platform's object store.
    storageId: nullableStr(32),
    sizeBytes: p.bigint('number'),
    checksum: str(80),
    error: nullableText(),
    abortRequested: p.boolean(),
    createdAt: p.datetime(),
    startedAt: nullableDate(),
    finishedAt: nullableDate(),
    /** The backup configuration that made it (fired or triggered); null for the detailed API's own. */
    scheduleId: nullableStr(32).index(),
    kind: str(16).$type<BackupKind>().default('dump'),
    volume: nullableStr(64),
    volumeMode: nullableStr(16).$type<VolumeMode | null>(),
    walStart: nullableStr(64),
    /** BackupCounts as JSON. */
    counts: nullableText(),
    // The last restore drill; drillStatus is also the drill queue (queued -> running by compare-and-set).
    drillStatus: nullableStr(16).$type<DrillStatus | null>().index(),
    drillReason: nullableText(),
    drillRequestedAt: nullableDate(),
    drillStartedAt: nullableDate(),
    drillFinishedAt: nullableDate(),
    /** What the restored copy held, as JSON. */
    drillCounts: nullableText(),
    drillChecksumOk: p.boolean().strictNullable(),
  },
});

export const BackupLog = defineEntity({
  name: 'BackupLog',
  tableName: 'backup_logs',
  properties: {
    id: p.integer().primary().autoincrement(),
    backupId: fk(),
    line: p.text(),
    stream: str(8).$type<LogStream>(),
    createdAt: p.datetime(),
  },
});

/** One row per database service whose backup settings were changed; absent means the defaults. */
export const BackupSettings = defineEntity({
  name: 'BackupSettings',
  tableName: 'backup_settings',
  properties: {
    serviceId: p.string().length(32).primary(),
    storage: str(16).$type<BackupStorage>(),
    // The storage instance that is this database's object store; null: the platform's.
    storageId: nullableStr(32),
    automaticEnabled: p.boolean(),
    dailyEnabled: p.boolean(),
    weeklyEnabled: p.boolean(),
    monthlyEnabled: p.boolean(),
    keepDaily: p.integer(),
    keepWeekly: p.integer(),
    keepMonthly: p.integer(),
    drill: str(16).$type<DrillFrequency>().default('weekly'),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});

/** Backup configurations (docs/backups.md); at most one managed row per service and period. */
export const BackupSchedule = defineEntity({
  name: 'BackupSchedule',
  tableName: 'backup_schedules',
  uniques: [{ properties: ['serviceId', 'managed'] }],
  indexes: [{ properties: ['nextRunAt'] }],
  properties: {
    id: id(),
    serviceId: fk(),
    schedule: str(120),
    storage: str(16).$type<BackupStorage>(),
    keepCount: p.integer().strictNullable(),
    keepDays: p.integer().strictNullable(),
    managed: nullableStr(16).$type<SchedulePeriod | null>(),
    nextRunAt: p.datetime(),
    lastRunAt: nullableDate(),
    lastError: nullableText(),
    volume: nullableStr(64),
    volumeMode: nullableStr(16).$type<VolumeMode | null>(),
    drill: str(16).$type<DrillFrequency>().default('weekly'),
    lastDrillAt: nullableDate(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});

/** A project's webhook: its secret, sealed; the URL is derived from the project's id. */
export const ProjectWebhook = defineEntity({
  name: 'ProjectWebhook',
  tableName: 'project_webhooks',
  properties: {
    projectId: p.string().length(32).primary(),
    secretEncrypted: p.text(),
    createdAt: p.datetime(),
    rotatedAt: p.datetime(),
  },
});

/**
 * The last deliveries to a project's webhook (the newest 100 are kept), whatever became of them. A
 * delivery id is unique per project and sender among the verified ones (`dedupeKey`): a replay is a duplicate.
 */
export const WebhookDelivery = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  indexes: [{ properties: ['projectId', 'receivedAt'] }],
  properties: {
    id: id(),
    projectId: p.string().length(32),
    provider: str(16),
    event: str(100),
    deliveryId: nullableStr(200),
    dedupeKey: nullableStr(300).unique(),
    outcome: str(16).$type<DeliveryOutcome>(),
    reason: p.text(),
    httpStatus: p.integer(),
    deploymentIds: p.json<string[]>(),
    previewIds: p.json<string[]>(),
    receivedAt: p.datetime(),
  },
});

/** Polling state of a service that polls its branch (or its image's digest): what was seen, and the last error. */
export const ServicePoll = defineEntity({
  name: 'ServicePoll',
  tableName: 'service_polls',
  properties: {
    serviceId: p.string().length(32).primary(),
    lastSeen: nullableStr(100),
    lastCheckedAt: nullableDate(),
    nextCheckAt: p.datetime().index(),
    failures: p.integer(),
    lastError: nullableText(),
  },
});

/** Commit statuses to post to a git host: one per deployment (following its state) or a one-off (a preview refused). */
export const CommitStatus = defineEntity({
  name: 'CommitStatus',
  tableName: 'commit_statuses',
  indexes: [{ properties: ['done', 'nextAttemptAt'] }],
  properties: {
    id: id(),
    deploymentId: nullableStr(32).index(),
    serviceId: p.string().length(32).index(),
    provider: str(16),
    repository: str(512),
    repositoryId: nullableStr(64),
    sha: str(64),
    ref: nullableStr(255),
    context: str(255),
    fixedState: nullableStr(16).$type<CommitState | null>(),
    description: nullableText(),
    targetUrl: nullableText(),
    reportedState: nullableStr(16),
    attempts: p.integer(),
    lastError: nullableText(),
    nextAttemptAt: p.datetime(),
    done: p.boolean(),
    createdAt: p.datetime(),
  },
});

/** A pull request's preview in a project: its environment `pr-<n>`, its services and databases, what it was built from. */
export const Preview = defineEntity({
  name: 'Preview',
  tableName: 'previews',
  uniques: [{ properties: ['projectId', 'number'] }],
  properties: {
    id: id(),
    projectId: fk(),
    number: p.integer(),
    provider: str(16),
    title: nullableText(),
    sourceEnvironmentId: str(32),
    environmentId: nullableStr(32).index(),
    services: p.json<PreviewService[]>(),
    databases: p.json<PreviewDatabase[]>(),
    headSha: str(64),
    headBranch: str(255),
    headRepository: nullableStr(512),
    fetchUrl: nullableText(),
    fetchRef: nullableStr(255),
    fromFork: p.boolean(),
    status: str(16).$type<PreviewStatus>(),
    phase: str(16).$type<PreviewPhase>(),
    deploymentIds: p.json<string[]>(),
    statusReason: nullableText(),
    url: nullableText(),
    lastPushAt: p.datetime(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});

export const ALL_ENTITIES = [
  Setting,
  Project,
  Environment,
  Service,
  ServiceDatabase,
  ServiceStorage,
  EnvVar,
  Domain,
  Deployment,
  DeploymentLog,
  ApiKey,
  DatabaseImport,
  DatabaseImportLog,
  MetricSample,
  User,
  UserSession,
  PersonalToken,
  PasswordReset,
  Backup,
  BackupLog,
  BackupSettings,
  BackupSchedule,
  // Events, notifications and the audit log (event-entities.ts).
  ...EVENT_ENTITIES,
  AuthRateHit,
  SigninBackoffEntry,
  // Servers, the registry's images and the control planes (cluster-entities.ts).
  ...CLUSTER_ENTITIES,
  ProjectWebhook,
  WebhookDelivery,
  ServicePoll,
  CommitStatus,
  Preview,
  // Point-in-time recovery and services' named volumes (data-safety-entities.ts).
  ...DATA_SAFETY_ENTITIES,
];

/** A row as the query builder hands it back: the entity's columns, without MikroORM's type-level markers. */

export type ProjectRow = Row<typeof Project>;
export type EnvironmentRow = Row<typeof Environment>;
export type ServiceRow = Row<typeof Service>;
export type ServiceDatabaseRow = Row<typeof ServiceDatabase>;
export type ServiceStorageRow = Row<typeof ServiceStorage>;
export type EnvVarRow = Row<typeof EnvVar>;
export type DomainRow = Row<typeof Domain>;
export type DeploymentRow = Row<typeof Deployment>;
export type DeploymentLogRow = Row<typeof DeploymentLog>;
export type ApiKeyRow = Row<typeof ApiKey>;
export type SettingRow = Row<typeof Setting>;
export type DatabaseImportRow = Row<typeof DatabaseImport>;
export type DatabaseImportLogRow = Row<typeof DatabaseImportLog>;
export type MetricSampleRow = Row<typeof MetricSample>;
export type UserRow = Row<typeof User>;
export type UserSessionRow = Row<typeof UserSession>;
export type PersonalTokenRow = Row<typeof PersonalToken>;
export type PasswordResetRow = Row<typeof PasswordReset>;
export type BackupRow = Row<typeof Backup>;
export type BackupLogRow = Row<typeof BackupLog>;
export type BackupSettingsRow = Row<typeof BackupSettings>;
export type BackupScheduleRow = Row<typeof BackupSchedule>;
export type ProjectWebhookRow = Row<typeof ProjectWebhook>;
export type WebhookDeliveryRow = Row<typeof WebhookDelivery>;
export type ServicePollRow = Row<typeof ServicePoll>;
export type CommitStatusRow = Row<typeof CommitStatus>;
export type PreviewRow = Row<typeof Preview>;

/** A backup as its row holds it: the drill in columns of its own, the counts as JSON. */
export type BackupRowOf<B extends BackupRecord> = Omit<B, 'drill' | 'counts' | 'engine'> & {
  engine: DatabaseEngine | '';
  counts: string | null;
  drillStatus: DrillStatus | null;
  drillReason: string | null;
  drillRequestedAt: Date | null;
  drillStartedAt: Date | null;
  drillFinishedAt: Date | null;
  drillCounts: string | null;
  drillChecksumOk: boolean | null;
};

same<Same<ProjectRow, ProjectRecord>>();
same<Same<EnvironmentRow, EnvironmentRecord>>();
same<
  Same<
    ServiceRow,
    Omit<ServiceRecord, 'source'> & { source: ServiceSourceKind } & Omit<RepositorySource, 'kind'> & { containerImage: string | null }
  >
>();
same<Same<ServiceDatabaseRow, Omit<DatabaseSource, 'kind'> & { serviceId: string }>>();
same<Same<ServiceStorageRow, Omit<StorageSource, 'kind'> & { serviceId: string }>>();
same<Same<EnvVarRow, EnvVarRecord>>();
same<Same<DomainRow, DomainRecord>>();
same<Same<DeploymentRow, DeploymentRecord>>();
same<Same<DeploymentLogRow, DeploymentLogRecord>>();
same<Same<ApiKeyRow, ApiKeyRecord>>();
same<Same<DatabaseImportRow, DatabaseImportRecord>>();
same<Same<DatabaseImportLogRow, DatabaseImportLogRecord>>();
same<Same<UserRow, UserRecord>>();
same<Same<UserSessionRow, SessionRecord>>();
same<Same<PersonalTokenRow, PersonalTokenRecord>>();
same<Same<PasswordResetRow, PasswordResetRecord>>();
same<Same<BackupRow, BackupRowOf<BackupRecord>>>();
same<Same<BackupLogRow, BackupLogRecord>>();
same<Same<BackupSettingsRow, BackupSettingsRecord>>();
same<Same<BackupScheduleRow, BackupScheduleRecord>>();
same<Same<ProjectWebhookRow, ProjectWebhookRecord>>();
same<Same<WebhookDeliveryRow, WebhookDeliveryRecord>>();
same<Same<ServicePollRow, ServicePollRecord>>();
same<Same<CommitStatusRow, CommitStatusRecord>>();
same<Same<PreviewRow, PreviewRecord>>();
