import { assertAdministrator, assertProjectVisible, assertScope, assertWrite, type Actor } from '../domain/access.js';
import { ValidationError } from '../domain/errors.js';
import type { ServiceDeps } from '../platform/deps.js';
import { projectFor } from '../platform/lookup.js';
import type { AuditActorKind, AuditDoor, AuditRecord, NewAuditRecord } from './audit.records.js';
import type { AuditFilter } from './audit.repository.js';
import type { AuditEntryView, AuditQuery } from './audit-views.js';

/** Who did it, as the audit log names it: the credential's kind and id, and the user behind it. */
export type AuditWho = Actor | { system: string } | null;

export interface AuditEvent {
  who: AuditWho;
  operation: string;
  door: AuditDoor;
  targetIds?: string[];
  projectId?: string | null;
  clientAddress?: string | null;
  /** `success`, or the error code the caller got. */
  outcome: string;
}

const HOUR = 3_600_000;
/** Failed authentications recorded per address and minute: past it, a guesser's noise is counted, not stored. */
const FAILURES_PER_MINUTE = 60;
const TRACKED_ADDRESSES = 10_000;

/** The fields of an input that name resources: `id`, `...Id`, `...Ids`. */
function idsIn(value: unknown, into: Set<string>, depth = 0): void {
  if (!value || typeof value !== 'object' || depth > 2) return;
  for (const [key, field] of Object.entries(value as Record<string, unknown>)) {
    if ((key === 'id' || key.endsWith('Id')) && typeof field === 'string' && field.length <= 64) into.add(field);
    else if (key.endsWith('Ids') && Array.isArray(field))
      for (const id of field.slice(0, 20))
        if (typeof id === 'string' && id.length <= 64) into.add(id);
        else if (depth < 1 && field && typeof field === 'object' && !Array.isArray(field)) idsIn(field, into, depth + 1);
  }
}

function actorFields(who: AuditWho): Pick<NewAuditRecord, 'actorKind' | 'actorId' | 'userId'> {
  if (!who) return { actorKind: 'anonymous', actorId: null, userId: null };
  if ('system' in who) return { actorKind: 'system', actorId: who.system, userId: null };
  const kind: AuditActorKind = who.via === 'session' ? 'user' : who.via === 'token' ? 'token' : 'key';
  return { actorKind: kind, actorId: kind === 'user' ? (who.userId ?? who.keyId) : who.keyId, userId: who.userId ?? null };
}

function present(entry: AuditRecord): AuditEntryView {
  return {
    id: String(entry.id),
    at: entry.at.toISOString(),
    actor: { kind: entry.actorKind, id: entry.actorId, userId: entry.userId },
    operation: entry.operation,
    door: entry.door,
    targetIds: entry.targetIds,
    projectId: entry.projectId,
    clientAddress: entry.clientAddress,
    outcome: entry.outcome,
  };
}

/**
 * The audit log: every write through every door (REST, tRPC, MCP, the CLI, git webhooks, the
 * platform's schedules), and every failed authentication and refused permission. A record holds
 * who, the operation, the target ids, the project, when, the client address and the outcome; never
 * a request body or a secret. Append-only: there is no API to change or delete one; the retention
 * (AUDIT_RETENTION_DAYS) removes the old.
 */
export class AuditService {
  private readonly failures = new Map<string, { minute: number; count: number }>();
  private lastPurge = 0;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly log?: (message: string, extra?: Record<string, unknown>) => void,
  ) {}

  /**
   * The ids an operation's input names, and the project they live in (read before the operation
   * runs, so a delete still finds it).
   */
  async locate(input: unknown): Promise<{ targetIds: string[]; projectId: string | null }> {
    const ids = new Set<string>();
    idsIn(input, ids);
    const fields = (input && typeof input === 'object' ? input : {}) as Record<string, unknown>;
    const str = (key: string) => (typeof fields[key] === 'string' ? (fields[key] as string) : null);
    const store = this.deps.store;
    let projectId = str('projectId');
    try {
      if (!projectId && str('projectSlug')) projectId = (await store.projects.getBySlug(str('projectSlug')!))?.id ?? null;
      const serviceId = str('serviceId') ?? str('appId') ?? str('databaseId') ?? str('storageId');
      const serviceOf = async (id: string | null | undefined) => (id ? ((await store.projects.getService(id))?.projectId ?? null) : null);
      if (!projectId && serviceId) projectId = await serviceOf(serviceId);
      if (!projectId && str('environmentId')) projectId = (await store.environments.get(str('environmentId')!))?.projectId ?? null;
      if (!projectId && str('deploymentId')) projectId = await serviceOf((await store.deployments.get(str('deploymentId')!))?.serviceId);
      if (!projectId && str('domainId')) projectId = await serviceOf((await store.domains.get(str('domainId')!))?.serviceId);
      if (!projectId && str('backupId')) projectId = await serviceOf((await store.backups.get(str('backupId')!))?.serviceId);
      if (!projectId && str('configurationId'))
        projectId = await serviceOf((await store.backupSchedules.get(str('configurationId')!))?.serviceId);
      if (!projectId && str('importId')) projectId = await serviceOf((await store.imports.get(str('importId')!))?.serviceId);
    } catch {
      // An id that is not one (the fuzz sends anything): the record names what was sent, without a project.
    }
    return { targetIds: [...ids], projectId };
  }

  /** The ids an operation's answer made (a created project, key, channel...), to add to its targets. */
  createdIds(output: unknown): string[] {
    const ids = new Set<string>();
    if (output && typeof output === 'object')
      for (const value of Object.values(output as Record<string, unknown>))
        if (value && typeof value === 'object' && !Array.isArray(value) && typeof (value as { id?: unknown }).id === 'string')
          ids.add((value as { id: string }).id);
    return [...ids];
  }

  /** The project a write's answer made or names (`{project}`, or an object with a `projectId`): a creation's own project. */
  createdProjectId(output: unknown): string | null {
    if (!output || typeof output !== 'object') return null;
    const fields = output as Record<string, unknown>;
    const project = fields.project as { id?: unknown } | undefined;
    if (project && typeof project.id === 'string') return project.id;
    for (const value of Object.values(fields))
      if (value && typeof value === 'object' && typeof (value as { projectId?: unknown }).projectId === 'string')
        return (value as { projectId: string }).projectId;
    return null;
  }

  /** Appends a record; never throws (a failure to write it is logged), so the operation's answer is never lost to it. */
  async record(event: AuditEvent): Promise<void> {
    if (event.outcome === 'unauthorized' && !this.countFailure(event.clientAddress ?? 'unknown')) return;
    const now = this.deps.clock.now();
    try {
      await this.deps.store.audit.append({
        at: now,
        ...actorFields(event.who),
        operation: event.operation.slice(0, 128),
        door: event.door,
        targetIds: [...new Set(event.targetIds ?? [])].slice(0, 20),
        projectId: event.projectId ?? null,
        clientAddress: event.clientAddress?.slice(0, 64) ?? null,
        outcome: event.outcome.slice(0, 32),
      });
    } catch (error) {
      this.log?.('an audit record could not be written', { operation: event.operation, error: (error as Error).message });
    }
    await this.purge(now);
  }

  /** `GET /api/audit`: the install's owners and admins (and all-project write keys). */
  async list(actor: Actor, query: AuditQuery): Promise<{ entries: AuditEntryView[]; nextCursor: string | null }> {
    assertAdministrator(actor, 'read the audit log');
    return this.page(this.filterOf(query), query.limit ?? 100);
  }

  /** `GET /api/projects/:id/audit`: writers of that project. */
  async listForProject(
    actor: Actor,
    projectId: string,
    query: AuditQuery,
  ): Promise<{ entries: AuditEntryView[]; nextCursor: string | null }> {
    const project = await projectFor(this.deps.store, actor, projectId);
    assertProjectVisible(actor, project.id, 'Project', projectId);
    assertWrite(actor);
    assertScope(actor, 'project:write');
    return this.page({ ...this.filterOf(query), projectId: project.id }, query.limit ?? 100);
  }

  private filterOf(query: AuditQuery): AuditFilter {
    const date = (field: 'from' | 'to') => {
      const value = query[field];
      if (value === undefined) return undefined;
      const parsed = new Date(value);
      if (Number.isNaN(parsed.getTime())) throw new ValidationError(field, `${field}: must be an ISO date and time`);
      return parsed;
    };
    const before = query.cursor === undefined ? undefined : Number(query.cursor);
    if (before !== undefined && !(Number.isInteger(before) && before > 0))
      throw new ValidationError('cursor', 'cursor: not a cursor this API gave');
    return {
      ...(query.projectId ? { projectId: query.projectId } : {}),
      ...(query.actor ? { actorId: query.actor } : {}),
      ...(query.operation ? { operation: query.operation } : {}),
      from: date('from'),
      to: date('to'),
      before,
    };
  }

  private async page(filter: AuditFilter, limit: number) {
    const rows = await this.deps.store.audit.list(filter, limit);
    return { entries: rows.map(present), nextCursor: rows.length === limit ? String(rows.at(-1)!.id) : null };
  }

  /** Whether another failed authentication from this address is recorded this minute. */
  private countFailure(address: string): boolean {
    const minute = Math.floor(this.deps.clock.now().getTime() / 60_000);
    const seen = this.failures.get(address);
    if (!seen || seen.minute !== minute) {
      if (this.failures.size >= TRACKED_ADDRESSES) this.failures.clear();
      this.failures.set(address, { minute, count: 1 });
      return true;
    }
    seen.count++;
    return seen.count <= FAILURES_PER_MINUTE;
  }

  /** Records past the retention, at most once an hour. */
  private async purge(now: Date): Promise<void> {
    if (now.getTime() - this.lastPurge < HOUR) return;
    this.lastPurge = now.getTime();
    try {
      const cutoff = new Date(now.getTime() - this.deps.config.events.auditRetentionDays * 86_400_000);
      const removed = await this.deps.store.audit.deleteBefore(cutoff);
      if (removed > 0) this.log?.('audit records past their retention removed', { removed });
    } catch (error) {
      this.log?.('the audit retention could not run', { error: (error as Error).message });
    }
  }
}
