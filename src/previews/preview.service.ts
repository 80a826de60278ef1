import { PassLoop } from '../platform/pass-loop.js';
import type { Actor } from '../domain/access.js';
import { databaseEngineOf, isEnginePassword } from '../domain/database-engines.js';
import {
  clipCommitMessage,
  DEFAULT_PREVIEW_SETTINGS,
  type PreviewDatabaseMode,
  type PreviewSettings,
  previewEnvironmentName,
} from '../domain/deploy-triggers.js';
import { referencedSlugs } from '../domain/env-references.js';
import { generatedHostname, hostnameScope, type EnvironmentRecord } from '../domain/environments.js';
import { ConflictError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { keepsData } from '../domain/storage-server.js';
import type { DeploymentRecord, ServiceRecord } from '../domain/types.js';
import { CopyRefused, type CopyLimits, type DatabaseCopy } from '../backups/database-copy.js';
import type { DeploymentService } from '../deployments/deployment.service.js';
import type { EnvironmentService } from '../environments/environment.service.js';
import { contextOf, type CommitStatusReporter } from '../git-hooks/commit-status.reporter.js';
import type { PullRequestHandler } from '../git-hooks/delivery-receiver.js';
import type { HookProvider, HookRepository, PullRequestEvent } from '../git-hooks/hook-event.js';
import { pushableServices, servicesOfRepository, type TriggerResult } from '../git-hooks/push-deployer.js';
import type { Store } from '../persistence/store.js';
import type { ServiceDeps } from '../platform/deps.js';
import { projectFor } from '../platform/lookup.js';
import type { PreviewNetworks } from './preview-networks.port.js';
import type { PreviewDatabase, PreviewRecord, PreviewService as PreviewServiceLink } from './preview.records.js';
import { presentPreview, type PreviewView } from './preview-views.js';

/** Joins a parent's database container to a preview's network under its slug (`shared` databases), and takes it off again. */

type Delivery = { provider: HookProvider; deliveryId: string | null };

const none = (reason: string): TriggerResult => ({ deploymentIds: [], previewIds: [], reason });
const FINISHED = new Set<DeploymentRecord['status']>(['succeeded', 'failed', 'aborted', 'superseded']);

/**
 * Pull-request previews. A pull request opened (or reopened, or given new commits) against the branch a
 * service with previews builds gets an environment `pr-<n>`: a clone of the service's environment with
 * the services it references, its databases copied (new credentials; filled from the parent's newest
 * backup or a fresh dump), empty or shared as `previews.databases` says, the pull request's head built
 * on a generated hostname and reported back as a commit status. A push redeploys it; closing, merging or
 * `ttlHours` without a push tears it all down. Provisioning is a loop over the previews' rows (durable:
 * a restart picks up where it was).
 */
export class PreviewService implements PullRequestHandler {
  private readonly loop = new PassLoop(
    () => this.pass(),
    () => this.deps.config.hooks.tickMs,
    (error) => this.log('preview pass failed', { error: error.message }),
  );
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly lastLinked = new Map<string, number>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly environments: EnvironmentService,
    private readonly deployments: DeploymentService,
    private readonly statuses: CommitStatusReporter,
    private readonly databases: { copy: DatabaseCopy | null; limits: CopyLimits },
    private readonly networks: PreviewNetworks | null,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
  ) {}

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  wake(): void {
    this.loop.wake();
  }

  /** A project's previews, oldest first. */
  async list(actor: Actor, projectId: string): Promise<{ previews: PreviewView[] }> {
    const project = await projectFor(this.deps.store, actor, projectId);
    return { previews: (await this.deps.store.previews.list(project.id)).map(presentPreview) };
  }

  async onPullRequest(projectId: string, delivery: Delivery, event: PullRequestEvent): Promise<TriggerResult> {
    const candidates = servicesOfRepository(
      await pushableServices(this.deps, projectId),
      event.repository,
      this.deps.config.deploy.gitBaseUrl,
    );
    const parents = candidates.filter((s) => s.previews?.enabled && s.branch === event.baseBranch);
    const existing = await this.deps.store.previews.getOf(projectId, event.number);
    if (event.action === 'closed' || event.action === 'merged') {
      if (!existing) return none(`Pull request #${event.number} was ${event.action}: it had no preview`);
      await this.withLock(existing, () => this.teardown(existing, `pull request ${event.action}`));
      return {
        deploymentIds: [],
        previewIds: [existing.id],
        reason: `Pull request #${event.number} was ${event.action}: preview ${previewEnvironmentName(event.number)} torn down`,
      };
    }
    if (parents.length === 0) {
      const what = event.repository.fullName ?? 'the repository';
      return none(
        candidates.length === 0
          ? `No service of this project builds ${what}`
          : `No service previews pull requests into ${event.baseBranch} of ${what} (previews.enabled, and the branch it builds)`,
      );
    }
    // One environment per pull request: the parents of the first environment that previews it.
    const environmentId = parents[0]!.environmentId;
    const previewed = parents.filter((s) => s.environmentId === environmentId);
    const settings = previewed[0]!.previews ?? DEFAULT_PREVIEW_SETTINGS;
    const key = `${projectId}:${event.number}`;
    return this.withKey(key, async () => {
      const current = await this.deps.store.previews.getOf(projectId, event.number);
      if (current && current.status !== 'limited') return this.update(current, previewed, delivery, event);
      if (event.fromFork && !settings.fromForks) {
        const reason = `Pull request #${event.number} comes from a fork (${event.head.repository.fullName ?? 'unknown'}): previews.fromForks is off, so no preview was made`;
        await this.tell(
          previewed[0]!,
          delivery,
          event,
          'failure',
          'No preview: pull requests from forks are not previewed (previews.fromForks)',
          null,
        );
        return none(reason);
      }
      const open = (await this.deps.store.previews.list(projectId)).filter(
        (p) =>
          p.status !== 'limited' &&
          p.number !== event.number &&
          p.services.some((s) => s.role === 'previewed' && s.parentServiceId === previewed[0]!.id),
      );
      if (open.length >= settings.maxOpen) return this.limit(current, previewed, delivery, event, settings.maxOpen);
      return this.open(current, previewed, delivery, event, settings);
    });
  }

  /** Past maxOpen: recorded as `limited` (so a later push retries), and the host is told. */
  private async limit(
    current: PreviewRecord | null,
    previewed: ServiceRecord[],
    delivery: Delivery,
    event: PullRequestEvent,
    maxOpen: number,
  ): Promise<TriggerResult> {
    const reason = `The preview limit was reached: ${previewed[0]!.name} already has ${maxOpen} open previews (previews.maxOpen ${maxOpen}); close one or raise the limit`;
    const record = current ?? this.newRecord(previewed, delivery, event);
    const saved: PreviewRecord = {
      ...record,
      status: 'limited',
      statusReason: reason,
      headSha: event.head.sha,
      headBranch: event.head.branch,
      updatedAt: this.deps.clock.now(),
    };
    if (current) await this.deps.store.previews.update(current.id, saved);
    else await this.deps.store.previews.insert(saved);
    await this.tell(previewed[0]!, delivery, event, 'failure', `Preview limit reached (previews.maxOpen ${maxOpen})`, null);
    return { deploymentIds: [], previewIds: [saved.id], reason };
  }

  private newRecord(previewed: ServiceRecord[], delivery: Delivery, event: PullRequestEvent): PreviewRecord {
    const now = this.deps.clock.now();
    return {
      id: newId(),
      projectId: previewed[0]!.projectId,
      number: event.number,
      provider: delivery.provider,
      title: event.title?.slice(0, 500) ?? null,
      sourceEnvironmentId: previewed[0]!.environmentId,
      environmentId: null,
      services: previewed.map((s) => ({ parentServiceId: s.id, previewServiceId: null, role: 'previewed' })),
      databases: [],
      headSha: event.head.sha,
      headBranch: event.head.branch,
      headRepository: event.head.repository.fullName,
      ...headSource(event),
      fromFork: event.fromFork,
      status: 'deploying',
      phase: 'databases',
      deploymentIds: [],
      statusReason: null,
      url: null,
      lastPushAt: now,
      createdAt: now,
      updatedAt: now,
    };
  }

  /**
   * A new preview: the environment `pr-<n>` with the previewed services and every sibling they reference
   * (directly or through another), in one transaction; then the loop deploys and fills it.
   */
  private async open(
    current: PreviewRecord | null,
    previewed: ServiceRecord[],
    delivery: Delivery,
    event: PullRequestEvent,
    settings: PreviewSettings,
  ): Promise<TriggerResult> {
    const project = (await this.deps.store.projects.get(previewed[0]!.projectId))!;
    const siblings = await this.deps.store.projects.listServicesIn([previewed[0]!.environmentId]);
    const closure = await referencedClosure(this.deps, siblings, previewed);
    // A fork's code never gets the parent's data: its databases start empty whatever the setting.
    const mode: PreviewDatabaseMode = event.fromFork ? 'empty' : settings.databases;
    const databases = closure.filter((s) => databaseEngineOf(s) !== null);
    const copied = closure.filter((s) => !(mode === 'shared' && databaseEngineOf(s) !== null));
    const record = { ...(current ?? this.newRecord(previewed, delivery, event)), ...headSource(event) };
    const previewUrlOf = (environment: EnvironmentRecord, copy: ServiceRecord) => {
      const { rootDomain, publicScheme, publicPort } = this.deps.config;
      const host = generatedHostname(copy, hostnameScope(project.slug, environment), rootDomain);
      return host ? `${publicScheme}://${host}${publicPort ? `:${publicPort}` : ''}` : '';
    };
    let made: { environment: EnvironmentRecord; copies: Map<string, ServiceRecord>; adjusted: string };
    try {
      made = await this.environments.cloneServices(
        project,
        previewEnvironmentName(event.number),
        copied,
        async (tx, environment, copies) => {
          const url = previewUrlOf(environment, copies.get(previewed[0]!.id)!);
          await this.adjustCopies(tx, copies, previewed, event, url);
          return url;
        },
      );
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
      const reason = `No preview: ${error.message}`;
      const failed: PreviewRecord = { ...record, status: 'failed', statusReason: reason, updatedAt: this.deps.clock.now() };
      if (current) await this.deps.store.previews.update(current.id, failed);
      else await this.deps.store.previews.insert(failed);
      await this.tell(previewed[0]!, delivery, event, 'failure', reason.slice(0, 140), null);
      return { deploymentIds: [], previewIds: [failed.id], reason };
    }
    const links: PreviewServiceLink[] = copied
      .filter((s) => databaseEngineOf(s) === null)
      .map((s) => ({
        parentServiceId: s.id,
        previewServiceId: made.copies.get(s.id)!.id,
        role: previewed.some((p) => p.id === s.id) ? 'previewed' : 'sibling',
      }));
    const previewDatabases: PreviewDatabase[] = databases.map((db) => ({
      parentServiceId: db.id,
      previewServiceId: made.copies.get(db.id)?.id ?? null,
      mode,
      filledFrom: mode === 'copy' ? null : mode === 'empty' ? 'nothing (empty)' : 'shared with the parent',
    }));
    const now = this.deps.clock.now();
    const saved: PreviewRecord = {
      ...record,
      headSha: event.head.sha,
      headBranch: event.head.branch,
      title: event.title?.slice(0, 500) ?? record.title,
      environmentId: made.environment.id,
      services: links,
      databases: previewDatabases,
      status: 'deploying',
      phase: 'databases',
      deploymentIds: [],
      statusReason: event.fromFork && settings.databases !== 'empty' ? "A fork's preview gets empty databases" : null,
      url: made.adjusted || null,
      lastPushAt: now,
      updatedAt: now,
    };
    if (current) await this.deps.store.previews.update(current.id, saved);
    else await this.deps.store.previews.insert(saved);
    await this.tell(previewed[0]!, delivery, event, 'pending', 'Preview being made', saved.url);
    const deploymentIds = await this.advance(saved, delivery);
    return {
      deploymentIds,
      previewIds: [saved.id],
      reason: `Preview ${previewEnvironmentName(event.number)} made for ${previewed.map((s) => s.name).join(', ')} with ${closure.length - previewed.length} referenced service(s); databases: ${databases.length === 0 ? 'none' : mode}`,
    };
  }

  /** The copies' own settings: the head's branch, no triggers of their own, the preview variables; a fork's keeps no secret. */
  private async adjustCopies(
    tx: Store,
    copies: Map<string, ServiceRecord>,
    previewed: ServiceRecord[],
    event: PullRequestEvent,
    url: string,
  ): Promise<void> {
    const now = this.deps.clock.now();
    const builtins = { PREVIEW_URL: url, PR_NUMBER: String(event.number), PR_BRANCH: event.head.branch };
    for (const [parentId, copy] of copies) {
      const parent = previewed.find((p) => p.id === parentId);
      await tx.projects.updateService(copy.id, {
        autoDeploy: false,
        pollIntervalSeconds: null,
        previews: null,
        watchPaths: [],
        ...(parent ? { branch: event.head.branch } : {}),
      });
      const engine = databaseEngineOf(copy);
      if (event.fromFork) {
        // A fork's preview keeps no secret of the parent: only the fresh passwords of its own database copies.
        for (const variable of await tx.env.list([copy.id]))
          if (variable.secret && !(engine && isEnginePassword(engine, variable.key))) await tx.env.delete(variable.id);
      }
      if (keepsData(copy)) continue;
      const overrides = (parent?.previews?.variables ?? []).filter((v) => !(event.fromFork && v.secret));
      for (const [key, value] of Object.entries(builtins))
        await upsertVariable(tx, copy.id, key, this.deps.secrets.encrypt(value), false, now);
      for (const variable of overrides) await upsertVariable(tx, copy.id, variable.key, variable.valueEncrypted, variable.secret, now);
    }
  }

  /** New commits on an open preview: its previewed services redeploy at the new head (the databases stay). */
  private async update(
    preview: PreviewRecord,
    previewed: ServiceRecord[],
    delivery: Delivery,
    event: PullRequestEvent,
  ): Promise<TriggerResult> {
    if (preview.headSha === event.head.sha && preview.status !== 'failed')
      return {
        deploymentIds: [],
        previewIds: [preview.id],
        reason: `Preview ${previewEnvironmentName(event.number)} is already at ${event.head.sha.slice(0, 12)}`,
      };
    const now = this.deps.clock.now();
    const next: PreviewRecord = {
      ...preview,
      ...headSource(event),
      headSha: event.head.sha,
      headBranch: event.head.branch,
      title: event.title?.slice(0, 500) ?? preview.title,
      status: 'deploying',
      statusReason: null,
      // Databases not filled yet stay first; otherwise only the services build again.
      phase: preview.phase === 'databases' ? 'databases' : 'services',
      deploymentIds: [],
      lastPushAt: now,
      updatedAt: now,
    };
    await this.deps.store.previews.update(preview.id, next);
    await this.tell(previewed[0]!, delivery, event, 'pending', 'Preview being redeployed', next.url);
    const deploymentIds = next.phase === 'services' ? await this.deployServices(next, delivery, true) : await this.advance(next, delivery);
    return {
      deploymentIds,
      previewIds: [preview.id],
      reason: `Preview ${previewEnvironmentName(event.number)} redeploying ${event.head.sha.slice(0, 12)}`,
    };
  }

  /**
   * One step of a preview being made, from the rows: databases deployed, then filled, then the other
   * services deployed at the head; ready once they went live, failed (with why) when one did not.
   * Resolves with the deployments it queued.
   */
  private async advance(preview: PreviewRecord, delivery: Delivery | null = null): Promise<string[]> {
    if (preview.status !== 'deploying' || !preview.environmentId) return [];
    const round = await this.deps.store.deployments.listByIds(preview.deploymentIds);
    const failed = round.find((d) => d.status === 'failed' || d.status === 'aborted');
    if (failed) {
      const service = await this.deps.store.projects.getService(failed.serviceId);
      return this.fail(preview, `${service?.name ?? 'A service'} did not deploy (deployment ${failed.id} ${failed.status})`).then(() => []);
    }
    if (!round.every((d) => FINISHED.has(d.status))) return [];
    if (preview.phase === 'databases') {
      const copies = preview.databases.filter((d) => d.previewServiceId !== null);
      if (preview.deploymentIds.length === 0 && copies.length > 0) {
        const ids = await this.deployAll(
          preview,
          copies.map((d) => d.previewServiceId!),
          delivery,
          false,
        );
        await this.deps.store.previews.update(preview.id, { deploymentIds: ids, updatedAt: this.deps.clock.now() });
        return ids;
      }
      const databases: PreviewDatabase[] = [];
      for (const database of preview.databases) databases.push(database.filledFrom === null ? await this.fill(database) : database);
      if (databases.some((d) => d.filledFrom === null)) return [];
      const refused = databases.find((d) => d.filledFrom?.startsWith('refused: '));
      await this.deps.store.previews.update(preview.id, { databases, updatedAt: this.deps.clock.now() });
      if (refused)
        return this.fail({ ...preview, databases }, `The database copy was refused: ${refused.filledFrom!.slice('refused: '.length)}`).then(
          () => [],
        );
      await this.linkShared({ ...preview, databases });
      return this.deployServices({ ...preview, databases, phase: 'services' }, delivery, false);
    }
    if (preview.phase === 'services') {
      const now = this.deps.clock.now();
      await this.deps.store.previews.update(preview.id, {
        status: 'ready',
        phase: 'done',
        statusReason: preview.statusReason,
        updatedAt: now,
      });
      return [];
    }
    return [];
  }

  /** The services' round: the previewed ones at the head (with their commit statuses), the siblings as their parents build. */
  private async deployServices(preview: PreviewRecord, delivery: Delivery | null, onlyPreviewed: boolean): Promise<string[]> {
    const ids = preview.services
      .filter((s) => s.previewServiceId !== null && (!onlyPreviewed || s.role === 'previewed'))
      .map((s) => s.previewServiceId!);
    const deploymentIds = await this.deployAll(preview, ids, delivery, true);
    await this.deps.store.previews.update(preview.id, { phase: 'services', deploymentIds, updatedAt: this.deps.clock.now() });
    return deploymentIds;
  }

  private async deployAll(preview: PreviewRecord, serviceIds: string[], delivery: Delivery | null, withHead: boolean): Promise<string[]> {
    const ids: string[] = [];
    for (const serviceId of serviceIds) {
      const service = await this.deps.store.projects.getService(serviceId);
      if (!service) continue;
      const link = preview.services.find((s) => s.previewServiceId === serviceId);
      const atHead = withHead && link?.role === 'previewed';
      const parent = link ? await this.deps.store.projects.getService(link.parentServiceId) : null;
      const deployment = await this.deployments.enqueueTriggered(
        service.id,
        {
          trigger: 'preview',
          commitSha: atHead ? preview.headSha : null,
          origin: {
            provider: delivery?.provider ?? preview.provider,
            deliveryId: delivery?.deliveryId ?? null,
            commitMessage: clipCommitMessage(atHead ? preview.title : null),
            commitAuthor: null,
            fetchRef: atHead ? preview.fetchRef : null,
            fetchUrl: atHead ? preview.fetchUrl : null,
            imageDigest: null,
            previewId: preview.id,
          },
        },
        `Deployment queued for ${service.name} in preview ${previewEnvironmentName(preview.number)}${atHead ? ` at ${preview.headSha.slice(0, 12)} (${preview.headBranch})` : ''}`,
        { cancelInProgress: parent?.cancelInProgress ?? false },
      );
      ids.push(deployment.id);
      if (atHead && parent) {
        const repository: HookRepository = { fullName: null, urls: [], id: null };
        await this.statuses.follow(deployment, parent, {
          provider: preview.provider,
          repository,
          ref: preview.headBranch,
          context: `${contextOf(parent)}/preview`,
          targetUrl: preview.url,
        });
      }
    }
    return ids;
  }

  /** Fills one database copy; a refusal (too large, a full disk) is kept as the reason, other failures are retried next pass. */
  private async fill(database: PreviewDatabase): Promise<PreviewDatabase> {
    const [parent, copy] = await Promise.all([
      this.deps.store.projects.getService(database.parentServiceId),
      database.previewServiceId ? this.deps.store.projects.getService(database.previewServiceId) : null,
    ]);
    if (!parent || !copy) return { ...database, filledFrom: 'refused: the database is gone' };
    if (!this.databases.copy) return { ...database, filledFrom: 'nothing (this platform cannot copy databases)' };
    const log = await this.logOf(copy.id);
    try {
      const from = await this.databases.copy.copy(parent, copy, this.databases.limits, AbortSignal.timeout(6 * 3_600_000), log);
      log(`Filled from ${from}`);
      return { ...database, filledFrom: from };
    } catch (error) {
      if (error instanceof CopyRefused) {
        log(`Copy refused: ${error.message}`);
        return { ...database, filledFrom: `refused: ${error.message}` };
      }
      log(`Copy failed, trying again: ${(error as Error).message}`);
      return database;
    }
  }

  /** Lines about a database's copy go to its newest deployment's log. */
  private async logOf(serviceId: string): Promise<(line: string) => void> {
    const newest = (await this.deps.store.deployments.list(serviceId, 1))[0];
    return (line) => {
      if (newest) void this.deployments.appendLog(newest.id, 'stdout', line).catch(() => {});
    };
  }

  private async fail(preview: PreviewRecord, reason: string): Promise<void> {
    await this.deps.store.previews.update(preview.id, { status: 'failed', statusReason: reason, updatedAt: this.deps.clock.now() });
    const previewed = preview.services.find((s) => s.role === 'previewed');
    const parent = previewed ? await this.deps.store.projects.getService(previewed.parentServiceId) : null;
    if (parent)
      await this.statuses.postOnce(
        parent,
        { provider: preview.provider, repository: null, sha: preview.headSha, ref: preview.headBranch },
        {
          state: 'failure',
          description: `Preview failed: ${reason}`.slice(0, 140),
          targetUrl: preview.url,
          context: `${contextOf(parent)}/preview`,
        },
      );
  }

  /** A preview's shared databases join its network under their slugs (again after the parent's was redeployed). */
  private async linkShared(preview: PreviewRecord): Promise<void> {
    if (!this.networks || !preview.environmentId) return;
    for (const database of preview.databases.filter((d) => d.previewServiceId === null)) {
      const parent = await this.deps.store.projects.getService(database.parentServiceId);
      if (parent)
        await this.networks
          .link(parent, preview.environmentId)
          .catch((error: Error) => this.log('shared database not linked', { error: error.message }));
    }
    this.lastLinked.set(preview.id, Date.now());
  }

  /** Everything of the preview goes: containers, volumes, images, routes and the environment (through the environment's removal). */
  async teardown(preview: PreviewRecord, why: string): Promise<void> {
    if (preview.environmentId) {
      const environment = await this.deps.store.environments.get(preview.environmentId);
      if (this.networks)
        for (const database of preview.databases.filter((d) => d.previewServiceId === null)) {
          const parent = await this.deps.store.projects.getService(database.parentServiceId);
          if (parent) await this.networks.unlink(parent, preview.environmentId).catch(() => {});
        }
      if (environment) await this.environments.removeSystemEnvironment(environment);
    }
    await this.deps.store.previews.delete(preview.id);
    this.lastLinked.delete(preview.id);
    this.log('preview torn down', { projectId: preview.projectId, number: preview.number, why });
  }

  /** The previews whose previewed parent was deleted go with it. */
  async removeOfServices(removed: ServiceRecord[]): Promise<void> {
    const ids = new Set(removed.map((s) => s.id));
    for (const projectId of new Set(removed.map((s) => s.projectId)))
      for (const preview of await this.deps.store.previews.list(projectId))
        if (preview.services.some((s) => s.role === 'previewed' && ids.has(s.parentServiceId)))
          await this.withLock(preview, () => this.teardown(preview, 'its service was deleted')).catch((error: Error) =>
            this.log('preview teardown failed', { previewId: preview.id, error: error.message }),
          );
  }

  /** One pass over every preview: provisioning steps, TTLs, previews whose environment was deleted by hand. */
  async pass(): Promise<void> {
    const now = this.deps.clock.now().getTime();
    for (const preview of await this.deps.store.previews.list(null)) {
      await this.withLock(preview, async () => {
        const current = await this.deps.store.previews.get(preview.id);
        if (!current) return;
        if (current.environmentId && !(await this.deps.store.environments.get(current.environmentId))) {
          await this.deps.store.previews.delete(current.id);
          return;
        }
        const previewed = current.services.find((s) => s.role === 'previewed');
        const parent = previewed ? await this.deps.store.projects.getService(previewed.parentServiceId) : null;
        if (!parent) return this.teardown(current, 'its service was deleted');
        const ttlHours = parent.previews?.ttlHours ?? null;
        if (ttlHours !== null && current.lastPushAt.getTime() + ttlHours * 3_600_000 < now)
          return this.teardown(current, `no push for ${ttlHours} h`);
        if (current.status === 'deploying') await this.advance(current);
        else if (current.status === 'ready' && now - (this.lastLinked.get(current.id) ?? 0) > 30_000) await this.linkShared(current);
      }).catch((error: Error) => this.log('preview step failed', { previewId: preview.id, error: error.message }));
    }
  }

  /** A one-off status on the head commit (made, refused, limited), on the parent's commit page. */
  private async tell(
    parent: ServiceRecord,
    delivery: Delivery,
    event: PullRequestEvent,
    state: 'pending' | 'failure',
    description: string,
    url: string | null,
  ): Promise<void> {
    await this.statuses.postOnce(
      parent,
      { provider: delivery.provider, repository: event.repository, sha: event.head.sha, ref: event.head.branch },
      { state, description, targetUrl: url, context: `${contextOf(parent)}/preview` },
    );
  }

  private withLock<T>(preview: Pick<PreviewRecord, 'projectId' | 'number'>, fn: () => Promise<T>): Promise<T> {
    return this.withKey(`${preview.projectId}:${preview.number}`, fn);
  }

  /** One step at a time per pull request: a delivery and the loop never work on one preview at once. */
  private withKey<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(key) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const settled = next.catch(() => {});
    this.locks.set(key, settled);
    void settled.then(() => {
      if (this.locks.get(key) === settled) this.locks.delete(key);
    });
    return next;
  }
}

/** Where the head is fetched from: the host's pull-request ref, or a fork's repository where the host publishes none. */
function headSource(event: PullRequestEvent): Pick<PreviewRecord, 'fetchRef' | 'fetchUrl'> {
  if (event.headRef) return { fetchRef: event.headRef, fetchUrl: null };
  if (!event.fromFork) return { fetchRef: `refs/heads/${event.head.branch}`, fetchUrl: null };
  const url = event.head.repository.urls.find((u) => u.endsWith('.git')) ?? event.head.repository.urls[0] ?? null;
  return { fetchRef: `refs/heads/${event.head.branch}`, fetchUrl: url };
}

/** The previewed services and every service of their environment they reference, directly or through another. */
async function referencedClosure(deps: ServiceDeps, siblings: ServiceRecord[], previewed: ServiceRecord[]): Promise<ServiceRecord[]> {
  const bySlug = new Map(siblings.map((s) => [s.slug, s]));
  const variables = await deps.store.env.list(siblings.map((s) => s.id));
  const referencesOf = new Map<string, Set<string>>();
  for (const variable of variables) {
    const slugs = referencedSlugs(deps.secrets.decrypt(variable.valueEncrypted));
    if (slugs.length === 0) continue;
    const set = referencesOf.get(variable.serviceId) ?? new Set<string>();
    for (const slug of slugs) set.add(slug);
    referencesOf.set(variable.serviceId, set);
  }
  const picked = new Map(previewed.map((s) => [s.id, s]));
  const queue = [...previewed];
  while (queue.length > 0) {
    const service = queue.shift()!;
    for (const slug of referencesOf.get(service.id) ?? []) {
      const target = bySlug.get(slug);
      if (target && !picked.has(target.id)) {
        picked.set(target.id, target);
        queue.push(target);
      }
    }
  }
  // In the environment's order, so copies list as their parents do.
  return siblings.filter((s) => picked.has(s.id));
}

async function upsertVariable(
  tx: Store,
  serviceId: string,
  key: string,
  valueEncrypted: string,
  secret: boolean,
  now: Date,
): Promise<void> {
  const existing = await tx.env.getByKey(serviceId, key);
  if (existing) await tx.env.update(existing.id, { valueEncrypted, secret, updatedAt: now });
  else await tx.env.insert({ id: newId(), serviceId, key, valueEncrypted, secret, createdAt: now, updatedAt: now });
}
