import type { DeploymentRecord, ServiceRecord } from '../domain/types.js';
import { isTerminal } from '../domain/deployment-state.js';
import { ConflictError } from '../domain/errors.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { ServerRecord } from './server.records.js';
import type { DatabaseMover } from './service-move.js';

/** What a move needs of deployments: the live deployment's image run again, as a deployment of its own (no build). */
export interface MoveDeployments {
  /** Queues it with `firstLine` as its log's first line; null when nothing went live yet (nothing to move). */
  redeployLive(serviceId: string, firstLine: string): Promise<DeploymentRecord | null>;
}

/** The data volumes a move leaves on the earlier server, once the service serves from the new one. */
export interface LeftVolumes {
  /** Removes the service's volumes on that server (the platform's own for the local one); resolves with their names. */
  removeOn(server: ServerRecord, serviceId: string): Promise<string[]>;
}

/** How long a move is followed: a deployment has ended long before (its own timeouts), this only bounds the wait. */
const FOLLOW_TIMEOUT_MS = 3 * 60 * 60_000;
const FOLLOW_POLL_MS = 500;

/**
 * Moves a database or storage instance to another server as a deployment (docs/cluster.md, "Moving a database"):
 * the service is placed on the target, then its live image is deployed again. A database's deployment stops the
 * earlier server first (one server per volume), so the engine adapter finds the volume missing on the target
 * and copies it there from the stopped container before the new one starts; the readiness check, the switch of
 * the host port and the removal of the earlier container are the deployment's own, and its log states the
 * downtime ("unavailable for ... ms"). A deployment that fails starts the earlier container again, and the
 * placement goes back; once one succeeds, the volume left on the earlier server is removed.
 */
export class DeploymentDatabaseMover implements DatabaseMover {
  private readonly moving = new Set<string>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly deployments: MoveDeployments,
    private readonly volumes: LeftVolumes,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
  ) {}

  busy(serviceId: string): boolean {
    return this.moving.has(serviceId);
  }

  async start(service: ServiceRecord, from: ServerRecord, to: ServerRecord): Promise<{ deploymentId: string }> {
    if (this.moving.has(service.id)) throw new ConflictError(`${service.name} is being moved already`, { reason: 'moving' });
    const underway = await this.deps.store.deployments.listOfServiceByStatus(service.id, ['queued', 'running']);
    if (underway.length > 0)
      throw new ConflictError(`${service.name} has a deployment under way (${underway[0]!.id}): move it once that one ended`, {
        reason: 'deploying',
        deploymentId: underway[0]!.id,
      });
    this.moving.add(service.id);
    try {
      await this.deps.store.servers.place(service.id, to.id, this.deps.clock.now());
      const deployment = await this.deployments.redeployLive(
        service.id,
        `Moving ${service.name} from ${from.name} to ${to.name}: its live image runs on ${to.name}, its volume copied there while the server on ${from.name} is stopped (the downtime is stated below)`,
      );
      if (!deployment) {
        await this.placeBack(service, from);
        throw new ConflictError(`${service.name} has never been deployed: there is nothing to move yet`, { reason: 'not_deployed' });
      }
      void this.follow(service, from, to, deployment.id).finally(() => this.moving.delete(service.id));
      return { deploymentId: deployment.id };
    } catch (error) {
      this.moving.delete(service.id);
      throw error;
    }
  }

  /** The deployment's end decides: succeeded, the earlier volume goes; anything else, the placement goes back. */
  private async follow(service: ServiceRecord, from: ServerRecord, to: ServerRecord, deploymentId: string): Promise<void> {
    const deadline = Date.now() + FOLLOW_TIMEOUT_MS;
    let deployment = await this.deps.store.deployments.get(deploymentId);
    while (deployment && !isTerminal(deployment.status) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, FOLLOW_POLL_MS));
      deployment = await this.deps.store.deployments.get(deploymentId);
    }
    if (deployment?.status === 'succeeded') {
      const removed = await this.volumes.removeOn(from, service.id).catch((error: Error) => {
        this.log('a moved database\u2019s earlier volume could not be removed', {
          serviceId: service.id,
          server: from.name,
          error: error.message,
        });
        return [];
      });
      this.log('database moved', { serviceId: service.id, from: from.name, to: to.name, deploymentId, removedVolumes: removed });
      return;
    }
    if (deployment && !isTerminal(deployment.status)) return;
    await this.placeBack(service, from);
    this.log('database move failed: it stays where it was', { serviceId: service.id, from: from.name, to: to.name, deploymentId });
  }

  private async placeBack(service: ServiceRecord, from: ServerRecord): Promise<void> {
    await this.deps.store.servers.place(service.id, from.id, this.deps.clock.now());
  }
}
