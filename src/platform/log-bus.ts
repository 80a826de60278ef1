import { EventEmitter } from 'node:events';
import type { DeploymentStatus } from '../domain/deployment-state.js';
import type { DeploymentLogRecord } from '../domain/types.js';

export type DeploymentEvent = { type: 'log'; line: DeploymentLogRecord } | { type: 'status'; status: DeploymentStatus };

/**
 * In-process fan-out of what happens to deployments, so subscribers see a line the moment it
 * is stored. The database stays the record: a subscriber reads its snapshot from the store and
 * uses the bus only for what comes after.
 */
export class LogBus {
  private readonly emitter = new EventEmitter();

  constructor() {
    // One listener per open stream; hundreds of watchers of one deployment are legitimate.
    this.emitter.setMaxListeners(0);
  }

  publish(deploymentId: string, event: DeploymentEvent): void {
    this.emitter.emit(deploymentId, event);
  }

  subscribe(deploymentId: string, listener: (event: DeploymentEvent) => void): () => void {
    this.emitter.on(deploymentId, listener);
    return () => this.emitter.off(deploymentId, listener);
  }
}
