import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { ControlPlane, JobClaim, Lease, type ControlPlaneRow, type JobClaimRow, type LeaseRow } from '../persistence/cluster-entities.js';
import { Repository } from '../persistence/repository.js';
import type { ControlPlaneRecord, JobClaimRecord, LeaseRecord } from './control-plane.records.js';

/**
 * Control planes, job claims and leases. None of these writes counts as a change of the store's
 * version: they are bookkeeping of processes, and no cached read depends on them.
 */
export class ControlPlaneRepository extends Repository {
  async register(plane: ControlPlaneRecord): Promise<void> {
    await this.fork().upsert(ControlPlane, plane as ControlPlaneRow);
  }
  /** False when the row is gone (another process declared this one dead and removed it). */
  async beat(id: string, now: Date): Promise<boolean> {
    return (await this.fork().nativeUpdate(ControlPlane, { id }, { heartbeatAt: now })) > 0;
  }
  get(id: string): Promise<ControlPlaneRecord | null> {
    return this.row(ControlPlane, { id });
  }
  list(): Promise<ControlPlaneRecord[]> {
    return this.rows(ControlPlane, {}, { startedAt: 'asc' });
  }
  async unregister(id: string): Promise<void> {
    await this.fork().nativeDelete(ControlPlane, { id });
  }

  /** Inserts the claim; false when another holder has the job. */
  async claim(claim: JobClaimRecord): Promise<boolean> {
    try {
      await this.fork().insert(JobClaim, claim as JobClaimRow);
      return true;
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) return false;
      throw error;
    }
  }
  claimOf(jobId: string): Promise<JobClaimRecord | null> {
    return this.row(JobClaim, { jobId });
  }
  claimsOf(jobIds: string[]): Promise<JobClaimRecord[]> {
    if (jobIds.length === 0) return Promise.resolve([]);
    return this.rows(JobClaim, { jobId: { $in: jobIds } });
  }
  /** Removes the claim if `owner` still holds it (a dead holder's, taken over, or one's own). */
  async release(jobId: string, owner: string): Promise<boolean> {
    return (await this.fork().nativeDelete(JobClaim, { jobId, owner })) > 0;
  }

  lease(name: string): Promise<LeaseRecord | null> {
    return this.row(Lease, { name });
  }
  /** Takes a free lease; false when a row exists (held, or expired: see takeOver). */
  async createLease(lease: LeaseRecord): Promise<boolean> {
    try {
      await this.fork().insert(Lease, lease as LeaseRow);
      return true;
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) return false;
      throw error;
    }
  }
  /** Moves a lease from `from` (its holder as read) to `holder`: the compare-and-set of a takeover or a renewal. */
  async moveLease(name: string, from: string, holder: string, expiresAt: Date): Promise<boolean> {
    return (await this.fork().nativeUpdate(Lease, { name, holder: from }, { holder, expiresAt })) > 0;
  }
  async dropLease(name: string, holder: string): Promise<void> {
    await this.fork().nativeDelete(Lease, { name, holder });
  }
}
