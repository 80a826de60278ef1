import type { DeploymentLogRecord, DeploymentRecord, LogStream } from '../domain/types.js';
import { Deployment, DeploymentLog, type DeploymentLogRow } from '../persistence/entities.js';
import { fromJson, Repository, type Patch } from '../persistence/repository.js';

/** Deployments and their log lines. */
export class DeploymentRepository extends Repository {
  insert(deployment: DeploymentRecord): Promise<DeploymentRecord> {
    return this.insertRow(Deployment, deployment, 'deployment');
  }
  async get(id: string): Promise<DeploymentRecord | null> {
    const row = await this.row(Deployment, { id });
    return row && withOrigin(row);
  }
  /** Newest first. */
  async list(serviceId: string, limit?: number): Promise<DeploymentRecord[]> {
    return (await this.rows(Deployment, { serviceId }, { createdAt: 'desc', id: 'desc' }, limit)).map(withOrigin);
  }
  /** Deployments that went live, newest first: rollback targets, and the live one first. */
  async listLive(serviceId: string, limit?: number): Promise<DeploymentRecord[]> {
    return (await this.rows(Deployment, { serviceId, status: 'succeeded' }, { createdAt: 'desc', id: 'desc' }, limit)).map(withOrigin);
  }
  async listByIds(ids: string[]): Promise<DeploymentRecord[]> {
    if (ids.length === 0) return [];
    return (await this.rows(Deployment, { id: { $in: ids } })).map(withOrigin);
  }
  async listByStatus(statuses: DeploymentRecord['status'][]): Promise<DeploymentRecord[]> {
    return (await this.rows(Deployment, { status: { $in: statuses } }, { createdAt: 'asc', id: 'asc' })).map(withOrigin);
  }
  /** A service's deployments in these statuses, oldest first (the queued ones a newer push supersedes). */
  async listOfServiceByStatus(serviceId: string, statuses: DeploymentRecord['status'][]): Promise<DeploymentRecord[]> {
    return (await this.rows(Deployment, { serviceId, status: { $in: statuses } }, { createdAt: 'asc', id: 'asc' })).map(withOrigin);
  }
  update(id: string, patch: Patch<DeploymentRecord>): Promise<void> {
    return this.updateRow(Deployment, id, patch, 'deployment');
  }
  /**
   * Moves a deployment only if it is still in `from`: the compare-and-set that keeps an abort
   * and the runner from both winning. Returns whether this call made the move.
   */
  async transition(id: string, from: DeploymentRecord['status'][], patch: Patch<DeploymentRecord>): Promise<boolean> {
    this.written(Deployment);
    const changed = await this.fork().nativeUpdate(Deployment, { id, status: { $in: from } }, patch as never);
    return changed > 0;
  }
  /** The deployments of the services with their log lines. */
  async deleteOfServices(serviceIds: string[]): Promise<void> {
    if (serviceIds.length === 0) return;
    const deployments = await this.rows(Deployment, { serviceId: { $in: serviceIds } });
    if (deployments.length > 0) await this.deleteRows(DeploymentLog, { deploymentId: { $in: deployments.map((d) => d.id) } });
    await this.deleteRows(Deployment, { serviceId: { $in: serviceIds } });
  }

  // Log lines: appending them does not change the store's version.
  async appendLogs(
    deploymentId: string,
    lines: Array<{ line: string; stream: LogStream; createdAt: Date }>,
  ): Promise<DeploymentLogRecord[]> {
    const records: DeploymentLogRecord[] = [];
    await this.fork().transactional(async (tx) => {
      for (const line of lines) {
        const id = await tx.insert(DeploymentLog, { deploymentId, ...line } as DeploymentLogRow);
        records.push({ id: Number(id), deploymentId, ...line });
      }
    });
    return records;
  }
  /** The newest `limit` lines, oldest first. */
  async listLogTail(deploymentId: string, limit: number): Promise<DeploymentLogRecord[]> {
    return (await this.rows(DeploymentLog, { deploymentId }, { id: 'desc' }, limit)).reverse();
  }
  listLogs(deploymentId: string, afterId = 0, limit?: number): Promise<DeploymentLogRecord[]> {
    return this.rows(DeploymentLog, { deploymentId, id: { $gt: afterId } }, { id: 'asc' }, limit);
  }
}

function withOrigin(row: DeploymentRecord): DeploymentRecord {
  return { ...row, origin: fromJson(row.origin) };
}
