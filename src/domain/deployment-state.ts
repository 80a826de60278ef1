import { ConflictError } from './errors.js';

/** `superseded`: queued, then made stale by a newer push to the same service before it ran (recorded, never run). */
export const DEPLOYMENT_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'aborted', 'superseded'] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

const NEXT: Record<DeploymentStatus, readonly DeploymentStatus[]> = {
  queued: ['running', 'aborted', 'failed', 'superseded'],
  running: ['succeeded', 'failed', 'aborted'],
  succeeded: [],
  failed: [],
  aborted: [],
  superseded: [],
};

export function isTerminal(status: DeploymentStatus): boolean {
  return NEXT[status].length === 0;
}

export function isAbortable(status: DeploymentStatus): boolean {
  return status === 'queued' || status === 'running';
}

export function assertTransition(from: DeploymentStatus, to: DeploymentStatus): void {
  if (!NEXT[from].includes(to)) {
    throw new ConflictError(`A deployment cannot move from ${from} to ${to}`, { from, to });
  }
}
