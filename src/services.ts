import type { AccountService } from './accounts/account.service.js';
import type { ApiKeyService } from './accounts/api-key.service.js';
import type { PersonalTokenService } from './accounts/personal-token.service.js';
import type { TwoFactorService } from './accounts/two-factor.service.js';
import type { AuditService } from './audit/audit.service.js';
import type { EventStreamService } from './events/event-stream.service.js';
import type { NotificationService } from './notifications/notification.service.js';
import type { AiDiagnosticsService } from './ai/ai-diagnostics.service.js';
import type { BackupRestore } from './backups/backup-restore.js';
import type { BackupScheduleService } from './backups/backup-schedule.service.js';
import type { BackupSettingsService } from './backups/backup-settings.service.js';
import type { BackupService } from './backups/backup.service.js';
import type { DrillService } from './backups/drill.service.js';
import type { PitrService } from './pitr/pitr.service.js';
import type { VolumeBackupService } from './volumes/volume-backup.service.js';
import type { DatabaseAdminService } from './databases/database-admin.service.js';
import type { DatabaseCatalog } from './databases/database-catalog.service.js';
import type { DeliveryReceiver } from './git-hooks/delivery-receiver.js';
import type { WebhookService } from './git-hooks/webhook.service.js';
import type { PreviewService } from './previews/preview.service.js';
import type { DeploymentService } from './deployments/deployment.service.js';
import type { RuntimeLogService } from './deployments/runtime-log.service.js';
import type { EnvService } from './env/env.service.js';
import type { EnvironmentService } from './environments/environment.service.js';
import type { HealthService } from './health/health.service.js';
import type { DatabaseImportService } from './imports/database-import.service.js';
import type { MetricsService } from './metrics/metrics.service.js';
import type { ProjectService } from './projects/project.service.js';
import type { ServiceChanges } from './projects/service-changes.js';
import type { ServiceCreation } from './projects/service-creation.js';
import type { ServiceReader } from './projects/service-reader.js';
import type { ServiceRemoval } from './projects/service-removal.js';
import type { ServiceSuggestions } from './projects/service-suggestions.js';
import type { DnsService } from './routing/dns.service.js';
import type { DomainService } from './routing/domain.service.js';
import type { SettingsService } from './settings/settings.service.js';
import type { SystemService } from './settings/system.service.js';
import type { StorageCatalog } from './storage/storage-catalog.service.js';
import type { TerminalService } from './terminals/terminal.service.js';
import type { DatabaseTlsService } from './tls/database-tls.service.js';
import type { JoinService } from './cluster/join.service.js';
import type { RegistryService } from './cluster/registry.service.js';
import type { ServerService } from './cluster/server.service.js';
import type { ServiceMoves } from './cluster/service-move.js';

/**
 * The use cases the doors (routers, MCP, the SSE and download bridges, terminal sockets) call, by
 * name: what a request may reach, and nothing else (the runners and loops are the platform's).
 * The composition root (adapters/composition) builds them.
 */
export interface Services {
  system: SystemService;
  apiKeys: ApiKeyService;
  accounts: AccountService;
  twoFactor: TwoFactorService;
  personalTokens: PersonalTokenService;
  projects: ProjectService;
  environments: EnvironmentService;
  serviceCreation: ServiceCreation;
  serviceReader: ServiceReader;
  serviceChanges: ServiceChanges;
  suggestions: ServiceSuggestions;
  removal: ServiceRemoval;
  env: EnvService;
  domains: DomainService;
  dns: DnsService;
  settings: SettingsService;
  deployments: DeploymentService;
  runtimeLogs: RuntimeLogService;
  databases: DatabaseAdminService;
  databaseCatalog: DatabaseCatalog;
  storage: StorageCatalog;
  imports: DatabaseImportService;
  tls: DatabaseTlsService;
  backups: BackupService;
  backupSettings: BackupSettingsService;
  backupRestore: BackupRestore;
  backupSchedules: BackupScheduleService;
  drills: DrillService;
  pitr: PitrService;
  volumeBackups: VolumeBackupService;
  ai: AiDiagnosticsService;
  metrics: MetricsService;
  health: HealthService;
  terminals: TerminalService;
  servers: ServerService;
  serverJoins: JoinService;
  registry: RegistryService;
  serviceMoves: ServiceMoves;
  /** A project's webhook (URL, secret) and its recent deliveries. */
  webhooks: WebhookService;
  /** The public webhook door's use case: a delivery verified, recorded and acted on. */
  deliveries: DeliveryReceiver;
  previews: PreviewService;
  notifications: NotificationService;
  eventStream: EventStreamService;
  audit: AuditService;
}
