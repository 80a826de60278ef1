/*
 * What the routers (and the HTTP door) see of src: the use cases' contract, the wire views and inputs,
 * the errors and the access rules. Only exports: the object graph is built by adapters/composition.
 */

export type { Services } from './services.js';

export type { Actor } from './domain/access.js';
export type { ServiceDeps } from './platform/deps.js';
export type { PlatformConfig } from './platform/platform-config.js';
export { DEFAULT_PLATFORM_CONFIG, DEFAULT_EVENTS_CONFIG, type EventsConfig } from './platform/platform-config.js';
export { DomainError } from './domain/errors.js';
export { ERROR_CODES, type ErrorCode } from './domain/errors.js';
export { ACCESS_LEVELS, BUILD_METHODS, RUNTIME_MODES } from './domain/types.js';
export { SCOPES, PROCEDURE_SCOPES, SCOPE_DESCRIPTIONS, ROLES, type Scope, type ProcedureScope, type Role } from './domain/scopes.js';
export { assertProcedureScope, hasScope } from './domain/access.js';
export * from './accounts/account-views.js';
export type { Mailer, MailMessage, SmtpSettings } from './accounts/mailer.port.js';
export * from './projects/project-views.js';
export * from './routing/routing-views.js';
export * from './env/env-views.js';
export * from './deployments/deployment-views.js';
export * from './settings/settings-views.js';
export * from './ai/ai-views.js';
export * from './metrics/metrics-views.js';
export * from './health/health-views.js';
export * from './databases/database-views.js';
export * from './imports/import-views.js';
export * from './tls/tls-views.js';
export * from './backups/backup-views.js';
export * from './backups/backup-schedule-views.js';
export * from './storage/storage-views.js';
export * from './cluster/cluster-views.js';
export * from './cluster/cluster.inputs.js';
export * from './cluster/service-move.js';
export * from './git-hooks/git-hook-views.js';
export * from './previews/preview-views.js';
export type { StorageServer, StorageServerTarget } from './deployments/storage-server.port.js';
export { BACKUP_STORAGES } from './backups/backup.records.js';
export type { BackupFormat } from './backups/backup.records.js';
export type { BackupFiles } from './backups/backup-files.port.js';
export type { ObjectStore, ObjectStoreConfig, ObjectStoreFactory } from './backups/object-store.port.js';
export type { CountTarget, DatabaseDump, DumpTarget, EngineCounts, RunningDump } from './backups/database-dump.port.js';
export type { DeploymentStreamEvent } from './deployments/deployment.service.js';
export type { RuntimeStreamEvent } from './deployments/runtime-log.service.js';
export * from './platform/input-schemas.js';
export {
  createServiceBody,
  createServiceInput,
  updateServiceInput,
  projectInput,
  projectPatchInput,
  projectPageInput,
  PROJECT_PAGE_DEFAULT,
  PROJECT_PAGE_MAX,
  type CreateServiceInput,
  type UpdateServiceInput,
  type ProjectInput,
} from './projects/project.inputs.js';
export { settingsInput, type SettingsInput } from './settings/settings.inputs.js';
export { environmentInput, environmentPatchInput, type EnvironmentInput } from './environments/environment.inputs.js';
export * from './environments/environment-views.js';
export { aiRequestInput, type AiRequestInput } from './ai/ai.inputs.js';
export { DEPLOYMENT_STATUSES } from './domain/deployment-state.js';
export { DATABASE_ENGINES } from './domain/database-engines.js';
export type { RuntimeDeps } from './deployments/runtime-deps.js';
export { DEFAULT_TERMINAL_LIMITS, type TerminalLimits } from './terminals/terminal.service.js';
// Data safety (docs/backups.md): point-in-time recovery, restore drills, volume backups.
export { WAL_FILE_NAME, WAL_SPOOL_DIR, ARCHIVE_COMMAND, archiveMount, type ArchiveMount } from './domain/wal-spool.js';
export type {
  ArchivedFile,
  PointInTimeRecovery,
  RecoveryRequest,
  RecoveryResult,
  SpooledFile,
  WalSpool,
} from './pitr/wal-archive.port.js';
export type { VolumeArchive, VolumeStats } from './backups/volume-archive.port.js';
export * from './volumes/volume-views.js';
export { volumeName, volumesInput, MAX_VOLUMES_PER_SERVICE } from './volumes/volume.inputs.js';
export type { VolumeRuntime } from './volumes/volume-runtime.port.js';
export type { ScratchDatabase, ScratchDatabaseSpec, ScratchDatabases } from './backups/scratch-database.port.js';
export type { DrillEvent, DrillLimits, DrillPorts } from './backups/drill.service.js';
export { EVENT_TYPES, type EventType, type EventPayloads, type DomainEvent, type EventSeverity } from './domain/events.js';
export { CHANNEL_TYPES, type ChannelType } from './notifications/notification.records.js';
export {
  DeliveryError,
  type ChannelTarget,
  type NotificationMessage,
  type Notifier,
  type SendResult,
  type TargetCheck,
  type TargetGuard,
} from './notifications/notifier.port.js';
export { isPrivateAddress } from './notifications/private-address.js';
export * from './notifications/notification-views.js';
export {
  channelInput,
  channelPatchInput,
  ruleInput,
  deliveriesQuery,
  type ChannelInput,
  type ChannelPatchInput,
  type RuleInput,
  type DeliveriesQuery,
} from './notifications/notification.inputs.js';
export * from './audit/audit-views.js';
export { eventView, type EventView } from './events/event-views.js';
export type { AuditDoor } from './audit/audit.records.js';
export {
  pitrSettingsInput,
  pitrRestoreInput,
  pitrRestoreFields,
  confirmRequired,
  type PitrSettingsInput,
  type PitrRestoreInput,
} from './pitr/pitr.inputs.js';
export {
  pitrView,
  pitrRestoreView,
  pitrRestoreLogLineView,
  recoveryWindowView,
  type PitrView,
  type PitrRestoreView,
  type PitrRestoreLogLineView,
} from './pitr/pitr-views.js';
export { startAnswerReads, traceReads, type ReadTrace } from './platform/read-trace.js';
