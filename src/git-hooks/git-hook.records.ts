import type { CommitState } from './git-provider.port.js';

/** A project's webhook; the URL is `<public URL>/api/hooks/<projectId>`, the secret is sealed by the SecretBox. */
export interface ProjectWebhookRecord {
  projectId: string;
  secretEncrypted: string;
  createdAt: Date;
  rotatedAt: Date;
}

/**
 * What became of a delivery: `deployed` (deployments or previews made), `ignored` (verified, nothing to do,
 * the reason says why), `refused` (401, 400, 413: not verified or not readable), `duplicate` (a replay).
 */
export const DELIVERY_OUTCOMES = ['deployed', 'ignored', 'refused', 'duplicate'] as const;
export type DeliveryOutcome = (typeof DELIVERY_OUTCOMES)[number];

export interface WebhookDeliveryRecord {
  id: string;
  projectId: string;
  /** The sender as its headers named it, or `unknown`. */
  provider: string;
  event: string;
  deliveryId: string | null;
  /** `<projectId>:<provider>:<deliveryId>` of a verified delivery; null for a refused one (a forger must not burn an id). */
  dedupeKey: string | null;
  outcome: DeliveryOutcome;
  reason: string;
  httpStatus: number;
  deploymentIds: string[];
  previewIds: string[];
  receivedAt: Date;
}

/** The deliveries a project keeps, like a git host's "recent deliveries". */
export const DELIVERIES_KEPT = 100;

export interface ServicePollRecord {
  serviceId: string;
  /** The branch's commit (or the image's digest) last seen. */
  lastSeen: string | null;
  lastCheckedAt: Date | null;
  nextCheckAt: Date;
  /** Failed checks in a row: each doubles the wait, up to an hour. */
  failures: number;
  lastError: string | null;
}

export interface CommitStatusRecord {
  id: string;
  /** The deployment whose state it follows; null for a one-off (`fixedState`). */
  deploymentId: string | null;
  /** Whose git token posts it. */
  serviceId: string;
  provider: string;
  repository: string;
  repositoryId: string | null;
  sha: string;
  ref: string | null;
  context: string;
  fixedState: CommitState | null;
  description: string | null;
  targetUrl: string | null;
  /** The state the host last accepted. */
  reportedState: string | null;
  attempts: number;
  lastError: string | null;
  nextAttemptAt: Date;
  /** The final state was posted, or the host refused for good, or there is no token. */
  done: boolean;
  createdAt: Date;
}
