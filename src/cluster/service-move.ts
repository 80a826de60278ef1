import { z } from 'zod';
import { assertScope, assertWrite, type Actor } from '../domain/access.js';
import { ConflictError, NotSupportedError, ValidationError } from '../domain/errors.js';
import type { ServiceRecord } from '../domain/types.js';
import { serviceFor } from '../platform/lookup.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { ServerRecord } from './server.records.js';
import { holderOf, isStateful } from './service-holders.js';

/** `POST /api/services/{serviceId}/move`: the server to move a database or storage instance to. */
export const moveServiceInput = z.strictObject({
  serverId: z.string().min(1).max(64).meta({ description: 'The server to move it to (GET /api/servers)' }),
});
export type MoveServiceInput = z.infer<typeof moveServiceInput>;

const serverRef = z.object({ id: z.string(), name: z.string() }).meta({ id: 'ServerRef' });
export const serviceMoveView = z
  .object({
    accepted: z.literal(true),
    serviceId: z.string(),
    from: serverRef,
    to: serverRef,
  })
  .meta({ id: 'ServiceMove', description: 'A move under way: its steps and the downtime are written to the service\u2019s log' });
export type ServiceMoveView = z.infer<typeof serviceMoveView>;

/**
 * The job that moves a stateful service's volume and container from one server to another: a backup
 * through the backup path, the container and volume made on the target's engine, the restore, the
 * switch of routes and ports, the old container's removal, the downtime logged. Null: not built yet.
 */
export interface DatabaseMover {
  /** Starts the move and resolves once it runs (its outcome goes to the log). */
  start(service: ServiceRecord, from: ServerRecord, to: ServerRecord): Promise<void>;
  /** Whether a move of this service is under way. */
  busy(serviceId: string): boolean;
}

/**
 * Moving a database or storage instance to another server (issue 31). The request is held to its
 * rules before anything runs: a stateful service only (others run where their placement allows),
 * an existing server that is `ready`, `active` and joined, and not the one that holds it now.
 */
export class ServiceMoves {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly mover: DatabaseMover | null,
  ) {}

  async move(actor: Actor, serviceId: string, input: MoveServiceInput): Promise<ServiceMoveView> {
    assertWrite(actor);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    if (!isStateful(service))
      throw new NotSupportedError(
        'Only a database or a storage instance is moved: other services run wherever their placement allows (PATCH placement)',
        { reason: 'not_stateful' },
      );
    assertScope(actor, 'db:manage');
    const to = await this.deps.store.servers.get(input.serverId);
    if (!to) throw new ValidationError('serverId', `There is no server ${input.serverId} (GET /api/servers lists them)`);
    const from = await holderOf(this.deps.store, service);
    if (!from) throw new ConflictError('The server holding it is not recorded yet: try again in a moment', { reason: 'no_holder' });
    if (from.id === to.id) throw new ConflictError(`${service.name} is on ${to.name} already`, { reason: 'same_server', serverId: to.id });
    const joined = to.local || to.swarmNodeId !== null;
    if (!joined || to.state !== 'ready' || to.availability !== 'active')
      throw new ConflictError(
        `${to.name} cannot take it: ${!joined ? 'it has not joined yet' : to.state !== 'ready' ? `it is ${to.state}` : `its availability is ${to.availability}`}`,
        { reason: 'server_not_ready', serverId: to.id, state: to.state, availability: to.availability },
      );
    if (from.state === 'down')
      throw new ConflictError(`${from.name}, which holds its volume, is down: its data cannot be copied until it is back`, {
        reason: 'holder_down',
        serverId: from.id,
      });
    if (!this.mover)
      throw new NotSupportedError(
        'Moving a database between servers is not built yet: it stays on the server that holds its volume (docs/cluster.md)',
        { reason: 'move_not_built' },
      );
    if (this.mover.busy(service.id)) throw new ConflictError(`${service.name} is being moved already`, { reason: 'moving' });
    await this.mover.start(service, from, to);
    return { accepted: true, serviceId: service.id, from: { id: from.id, name: from.name }, to: { id: to.id, name: to.name } };
  }
}
