import { createHash, randomBytes } from 'node:crypto';
import type { Actor } from '../domain/access.js';
import { NotFoundError, NotRunningError, RateLimitedError, UnauthorizedError, ValidationError } from '../domain/errors.js';
import type { CurrentContainers } from '../deployments/current-containers.js';
import type { ReplicaLocator } from '../cluster/replica-locator.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceFor } from '../platform/lookup.js';
import { assertTerminalAccess } from './terminal-access.js';
import type { TerminalEngine, TerminalProcess } from './terminal-engine.port.js';

export interface TerminalLimits {
  /** A terminal with neither input nor output for this long is closed (its process killed). */
  idleTimeoutMs: number;
  /** Terminals open at once per API key (or token). */
  maxPerKey: number;
  /** Lifetime of a WebSocket ticket. */
  ticketTtlMs: number;
}

export const DEFAULT_TERMINAL_LIMITS: TerminalLimits = { idleTimeoutMs: 15 * 60_000, maxPerKey: 5, ticketTtlMs: 30_000 };

/** What a terminal opens in: the service's current container, or one container of this install by id or name. */
export type TerminalTarget = { kind: 'service'; serviceId: string } | { kind: 'container'; ref: string };

const ID_SEGMENT = '[a-z0-9]{1,64}';
/** Docker's container names and ids (a name may carry `_`, `.` and `-`). */
const CONTAINER_REF = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const SERVICE_PATH = new RegExp(`^/api/ws/services/(${ID_SEGMENT})/terminal$`);
const CONTAINER_PATH = /^\/api\/ws\/terminal\/([^/]+)$/;

/** The WebSocket paths of the contract, as targets; null for any other path. */
export function parseTerminalPath(path: string): TerminalTarget | null {
  const service = SERVICE_PATH.exec(path);
  if (service) return { kind: 'service', serviceId: service[1]! };
  const container = CONTAINER_PATH.exec(path);
  if (container && CONTAINER_REF.test(container[1]!)) return { kind: 'container', ref: container[1]! };
  return null;
}

export function terminalPathOf(target: TerminalTarget): string {
  return target.kind === 'service' ? `/api/ws/services/${target.serviceId}/terminal` : `/api/ws/terminal/${target.ref}`;
}

/** A target checked for access and resolved to a running container and a command that exists in it. */
export interface PreparedTerminal {
  keyId: string;
  containerId: string;
  containerName: string;
  /** The swarm node whose engine runs the container (a task on the cluster); null: the platform's own engine. */
  nodeId: string | null;
  cmd: string[];
}

interface Ticket {
  actor: Actor;
  path: string;
  expiresAt: number;
}

/** Outstanding tickets are few and short-lived; these bound what a key minting them in a loop can hold. */
const MAX_TICKETS = 10_000;
const MAX_TICKETS_PER_KEY = 50;
const COMMAND = /^[A-Za-z0-9_./+-]{1,256}$/;

/**
 * Container terminals: who may open one where, single-use tickets for browsers (which cannot set
 * headers on a WebSocket), and the cap on open terminals per key. The byte pumping is the edge's.
 */
export class TerminalService {
  private readonly tickets = new Map<string, Ticket>();
  private readonly open = new Map<string, number>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: {
      current: CurrentContainers;
      terminal: TerminalEngine;
      /** A service's tasks on the cluster (issue 31); absent: the platform's own engine only. */
      replicas?: ReplicaLocator | null;
    } | null,
    readonly limits: TerminalLimits = DEFAULT_TERMINAL_LIMITS,
  ) {}

  /**
   * A ticket for one WebSocket of `path`, checked now as the socket would be (so a browser gets a
   * clear REST error instead of a failed handshake) and again when it is used.
   */
  async issueTicket(actor: Actor, path: string): Promise<{ ticket: string; expiresAt: string }> {
    const target = parseTerminalPath(path);
    if (!target)
      throw new ValidationError('target', 'target must be a terminal path: /api/ws/services/<id>/terminal or /api/ws/terminal/<container>');
    await this.locate(actor, target);
    const now = this.deps.clock.now().getTime();
    this.sweep(now);
    const held = [...this.tickets.values()].filter((t) => t.actor.keyId === actor.keyId).length;
    if (held >= MAX_TICKETS_PER_KEY || this.tickets.size >= MAX_TICKETS) {
      throw new RateLimitedError(
        'Too many unused terminal tickets; use or let some expire first',
        Math.ceil(this.limits.ticketTtlMs / 1000),
      );
    }
    const ticket = `wst_${randomBytes(24).toString('base64url')}`;
    const expiresAt = now + this.limits.ticketTtlMs;
    // Held as a hash, like every credential: a heap dump does not hand out live tickets.
    this.tickets.set(hash(ticket), { actor, path, expiresAt });
    return { ticket, expiresAt: new Date(expiresAt).toISOString() };
  }

  /** The actor a ticket was issued to; it works once, for the path it names, before it expires. */
  redeemTicket(ticket: string, path: string): Actor {
    const key = hash(ticket);
    const entry = this.tickets.get(key);
    this.tickets.delete(key);
    if (!entry || entry.path !== path || entry.expiresAt <= this.deps.clock.now().getTime()) {
      throw new UnauthorizedError('The terminal ticket is unknown, used, expired or for another terminal');
    }
    return entry.actor;
  }

  /** The access level, before anything about the request is looked at (403 before 400 and 404, as everywhere). */
  authorize(actor: Actor): void {
    assertTerminalAccess(actor);
  }

  /** Checks access, finds the running container and the command (`/bin/sh` unless asked otherwise). */
  async prepare(actor: Actor, target: TerminalTarget, command: string | undefined, signal: AbortSignal): Promise<PreparedTerminal> {
    assertTerminalAccess(actor);
    if (command !== undefined && !COMMAND.test(command)) {
      throw new ValidationError('command', 'command is one executable: a name on the container PATH or an absolute path');
    }
    const container = await this.locate(actor, target);
    const terminal = this.runtime!.terminal;
    const wanted = command ?? '/bin/sh';
    const resolved = await terminal.resolveCommand(container.id, wanted, signal, container.nodeId);
    if (!resolved) {
      throw command === undefined
        ? new NotRunningError('This container has no /bin/sh; ask for a command its image has (?command=...)', { field: 'command' })
        : new ValidationError('command', `${JSON.stringify(command)} does not exist in this container`);
    }
    return { keyId: actor.keyId, containerId: container.id, containerName: container.name, nodeId: container.nodeId, cmd: [resolved] };
  }

  /** Counts a terminal against its key's cap; the returned function gives the place back (once). */
  acquire(keyId: string): () => void {
    const count = this.open.get(keyId) ?? 0;
    if (count >= this.limits.maxPerKey) {
      throw new RateLimitedError(`At most ${this.limits.maxPerKey} terminals may be open at once per key`, 5);
    }
    this.open.set(keyId, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(keyId) ?? 1) - 1;
      if (left > 0) this.open.set(keyId, left);
      else this.open.delete(keyId);
    };
  }

  start(prepared: PreparedTerminal, size: { cols: number; rows: number }, signal: AbortSignal): Promise<TerminalProcess> {
    return this.runtime!.terminal.exec({ containerId: prepared.containerId, nodeId: prepared.nodeId, cmd: prepared.cmd, ...size, signal });
  }

  /** 403 for the access level first, then 404 for what the key cannot see or what is not this install's, then 409 when nothing runs. */
  private async locate(actor: Actor, target: TerminalTarget): Promise<{ id: string; name: string; nodeId: string | null }> {
    assertTerminalAccess(actor);
    if (target.kind === 'service') {
      const service = await serviceFor(this.deps.store, actor, target.serviceId);
      assertTerminalAccess(actor, { projectId: service.projectId, resource: 'Service', addressedAs: target.serviceId });
      // On the cluster, the serving Swarm service's first task, on whichever node runs it (null: plain containers).
      const tasks = this.runtime?.replicas ? await this.runtime.replicas.tasksOf(service.id) : null;
      if (tasks) {
        const task = [...tasks].sort((a, b) => a.taskId.localeCompare(b.taskId))[0];
        if (!task) throw new NotRunningError('This service has no running task');
        return { id: task.containerId, name: `task ${task.taskId} on node ${task.nodeId}`, nodeId: task.nodeId };
      }
      const container = this.runtime ? await this.runtime.current.currentOf(service) : null;
      if (!container) throw new NotRunningError('This service has no running container');
      return { id: container.id, name: container.name, nodeId: null };
    }
    // Only the containers of this install's services: never another install's, the proxy's or a stranger's.
    const found = this.runtime ? await this.runtime.current.serviceContainer(target.ref) : null;
    if (!found) return this.locateTask(actor, target.ref);
    const { container, projectId } = found;
    assertTerminalAccess(actor, { projectId, resource: 'Container', addressedAs: target.ref });
    if (!container.running) throw new NotRunningError('This container is not running');
    return { id: container.id, name: container.name, nodeId: null };
  }

  /** A running task's container on any node, by its id (or a prefix of 12 or more): ours only, as for local containers. */
  private async locateTask(actor: Actor, ref: string): Promise<{ id: string; name: string; nodeId: string | null }> {
    const tasks = ref.length >= 12 && this.runtime?.replicas ? await this.runtime.replicas.clusterTasks() : [];
    const task = tasks.find((each) => each.containerId.startsWith(ref));
    const service = task ? await this.deps.store.projects.getService(task.serviceId) : null;
    if (!task || !service) throw new NotFoundError('Container', ref);
    assertTerminalAccess(actor, { projectId: service.projectId, resource: 'Container', addressedAs: ref });
    return { id: task.containerId, name: `task ${task.taskId} on node ${task.nodeId}`, nodeId: task.nodeId };
  }

  private sweep(now: number): void {
    for (const [key, ticket] of this.tickets) if (ticket.expiresAt <= now) this.tickets.delete(key);
  }
}

function hash(ticket: string): string {
  return createHash('sha256').update(ticket).digest('hex');
}
