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
    deploymentId: z.string().meta({
      description: 'The deployment that carries the move: its log (GET /api/deployments/{id}/logs) states each step and the downtime',
    }),
  })
  .meta({ id: 'ServiceMove', description: 'A move under way, as a deployment of the live image on the target server' });
export type ServiceMoveView = z.infer<typeof serviceMoveView>;

/**
 * What moves a stateful service's volume and container from one server to another (DeploymentDatabaseMover):
 * a deployment on the target that copies the volume from the stopped earlier server. Null: this platform
 * runs no engine (its use cases' tests).
 */
export interface DatabaseMover {
  /** Starts the move and resolves with the deployment that carries it (its log tells the steps and the downtime). */
  start(service: ServiceRecord, from: ServerRecord, to: ServerRecord): Promise<{ deploymentId: string }>;
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
      throw new NotSupportedError('This platform runs no container engine: nothing can be moved', { reason: 'move_not_built' });
    if ((await this.deps.store.pitr.getSettings(service.id))?.enabled)
      throw new ConflictError(
        `${service.name} has point-in-time recovery on: its WAL is shipped from the server that runs the platform. Turn it off (PUT .../pitr) to move it`,
        { reason: 'pitr_enabled' },
      );
    if (this.mover.busy(service.id)) throw new ConflictError(`${service.name} is being moved already`, { reason: 'moving' });
    const { deploymentId } = await this.mover.start(service, from, to);
    return {
      accepted: true,
      serviceId: service.id,
      from: { id: from.id, name: from.name },
      to: { id: to.id, name: to.name },
      deploymentId,
    };
  }
}
