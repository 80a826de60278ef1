import type { EntityManager } from '@mikro-orm/sql';
import { AccountRepository } from '../accounts/account.repository.js';
import { ApiKeyRepository } from '../accounts/api-key.repository.js';
import { AuthLimitRepository } from '../accounts/auth-limit.repository.js';
import { BackupRepository } from '../backups/backup.repository.js';
import { BackupScheduleRepository } from '../backups/backup-schedule.repository.js';
import { PitrRepository } from '../pitr/pitr.repository.js';
import { DeploymentRepository } from '../deployments/deployment.repository.js';
import { EnvRepository } from '../env/env.repository.js';
import { EnvironmentRepository } from '../environments/environment.repository.js';
import { DatabaseImportRepository } from '../imports/database-import.repository.js';
import { ProjectRepository } from '../projects/project.repository.js';
import { DomainRepository } from '../routing/domain.repository.js';
import { SettingsRepository } from '../settings/settings.repository.js';
import { MetricsRepository } from '../metrics/metrics.repository.js';
import { ServerRepository } from '../cluster/server.repository.js';
import { ControlPlaneRepository } from '../jobs/control-plane.repository.js';
import { GitHookRepository } from '../git-hooks/git-hook.repository.js';
import { PreviewRepository } from '../previews/preview.repository.js';
import { EventRepository } from '../events/event.repository.js';
import { NotificationRepository } from '../notifications/notification.repository.js';
import { AuditRepository } from '../audit/audit.repository.js';
import { SigninAddressRepository } from '../accounts/signin-address.repository.js';
import { ServiceVolumeRepository } from '../volumes/volume.repository.js';
import type * as ClusterEntities from './cluster-entities.js';
import type * as DataSafetyEntities from './data-safety-entities.js';
import type * as Entities from './entities.js';
import type * as EventEntities from './event-entities.js';
import { type Session, WriteCounter } from './repository.js';
import { watchStatements, watchTransaction } from './statement-tables.js';

/** A table, by its entity's name: what a cache says it reads from (see Store.versionOf). */
export type Table =
  | Exclude<keyof typeof Entities, 'ALL_ENTITIES'>
  | Exclude<keyof typeof EventEntities, 'EVENT_ENTITIES'>
  | Exclude<keyof typeof DataSafetyEntities, 'DATA_SAFETY_ENTITIES'>
  | Exclude<keyof typeof ClusterEntities, 'CLUSTER_ENTITIES'>;

/**
 * The repositories the use cases read and write through, one per capability, all on one session:
 * outside a transaction each call forks its own entity manager; `transaction` hands every
 * repository the transaction's.
 */
export class Store {
  readonly projects: ProjectRepository;
  readonly environments: EnvironmentRepository;
  readonly env: EnvRepository;
  readonly domains: DomainRepository;
  readonly deployments: DeploymentRepository;
  readonly settings: SettingsRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly imports: DatabaseImportRepository;
  readonly metrics: MetricsRepository;
  readonly accounts: AccountRepository;
  readonly backups: BackupRepository;
  readonly backupSchedules: BackupScheduleRepository;
  readonly pitr: PitrRepository;
  readonly volumes: ServiceVolumeRepository;
  readonly servers: ServerRepository;
  readonly controlPlanes: ControlPlaneRepository;
  readonly gitHooks: GitHookRepository;
  readonly previews: PreviewRepository;
  readonly events: EventRepository;
  readonly notifications: NotificationRepository;
  readonly audit: AuditRepository;
  readonly signinAddresses: SigninAddressRepository;
  readonly authLimits: AuthLimitRepository;
  private readonly session: Session;
  /** Inside a transaction: what runs once it committed (never after a rollback). */
  private readonly committed: Array<() => void> | null;

  constructor(em: EntityManager, inTransaction = false, writes: WriteCounter = new WriteCounter()) {
    this.session = { em, inTransaction, writes };
    this.committed = inTransaction ? [] : null;
    // Every statement's tables count (statement-tables.ts), a transaction's in its own counter too.
    if (inTransaction) watchTransaction(em, writes);
    else watchStatements(em, writes);
    this.projects = new ProjectRepository(this.session);
    this.environments = new EnvironmentRepository(this.session);
    this.env = new EnvRepository(this.session);
    this.domains = new DomainRepository(this.session);
    this.deployments = new DeploymentRepository(this.session);
    this.settings = new SettingsRepository(this.session);
    this.apiKeys = new ApiKeyRepository(this.session);
    this.imports = new DatabaseImportRepository(this.session);
    this.metrics = new MetricsRepository(this.session);
    this.accounts = new AccountRepository(this.session);
    this.backups = new BackupRepository(this.session);
    this.backupSchedules = new BackupScheduleRepository(this.session);
    this.pitr = new PitrRepository(this.session);
    this.volumes = new ServiceVolumeRepository(this.session);
    this.servers = new ServerRepository(this.session);
    this.controlPlanes = new ControlPlaneRepository(this.session);
    this.gitHooks = new GitHookRepository(this.session);
    this.previews = new PreviewRepository(this.session);
    this.events = new EventRepository(this.session);
    this.notifications = new NotificationRepository(this.session);
    this.audit = new AuditRepository(this.session);
    this.signinAddresses = new SigninAddressRepository(this.session);
    this.authLimits = new AuthLimitRepository(this.session);
  }

  /** Runs `fn` once this store's transaction has committed; outside one, right away (after the current call stack). */
  afterCommit(fn: () => void): void {
    if (this.committed) this.committed.push(fn);
    else queueMicrotask(fn);
  }

  /**
   * Changes with every write made through this store (and after every transaction, committed or
   * not): a read cached at one version is current as long as the version is. Log lines do not count.
   */
  get version(): number {
    return this.session.writes.count;
  }

  /**
   * The version of some tables (entity names: `Service`, `Deployment`, `ApiKey`...): changes with every
   * write to one of them, and only then. What a cache reads from, it names here.
   */
  versionOf(tables: readonly Table[]): number {
    return this.session.writes.of(tables);
  }

  /** Runs `fn` in one database transaction; a throw rolls everything back. */
  async transaction<T>(fn: (store: Store) => Promise<T>): Promise<T> {
    if (this.session.inTransaction) return fn(this);
    const writes = new WriteCounter(this.session.writes);
    let inner: Store | undefined;
    try {
      const result = await this.session.em.fork({ clear: true }).transactional((em) => {
        inner = new Store(em, true, writes);
        return fn(inner);
      });
      for (const committed of inner?.committed ?? []) queueMicrotask(committed);
      return result;
    } finally {
      // Reads made meanwhile may have seen rows the transaction wrote (or then rolled back): once
      // more for each table it wrote, so nothing cached during it outlives it.
      for (const table of writes.written()) this.session.writes.bump(table);
    }
  }

  /** A round trip to the database, for the health check. */
  async ping(): Promise<void> {
    await this.session.em.fork({ clear: true }).getConnection().execute('select 1');
  }
}
