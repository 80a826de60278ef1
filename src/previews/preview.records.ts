import type { PreviewDatabaseMode } from '../domain/deploy-triggers.js';

/**
 * `deploying` while its services deploy, `ready` once every previewed service serves, `failed` (a
 * database copy refused, a build that failed: statusReason says why), `limited` (past maxOpen, or a
 * fork's pull request while previews.fromForks is off: nothing was made, and the host was told).
 */
export const PREVIEW_STATUSES = ['deploying', 'ready', 'failed', 'limited'] as const;
export type PreviewStatus = (typeof PREVIEW_STATUSES)[number];

/** Where a preview being made is: its databases deploy and fill first, then its other services deploy. */
export const PREVIEW_PHASES = ['databases', 'services', 'done'] as const;
export type PreviewPhase = (typeof PREVIEW_PHASES)[number];

/** A service of the preview: a previewed one (it builds the pull request), or a sibling it references, and its copy. */
export interface PreviewService {
  parentServiceId: string;
  /** Its copy in the preview environment; null before the environment is made (a limited preview). */
  previewServiceId: string | null;
  /** `previewed`: built from the pull request's head; `sibling`: a service it references, deployed as the parent's is. */
  role: 'previewed' | 'sibling';
}

/** A database the previewed services reference, and what it became in the preview. */
export interface PreviewDatabase {
  parentServiceId: string;
  /** Its copy in the preview; null when shared with the parent. */
  previewServiceId: string | null;
  mode: PreviewDatabaseMode;
  /** `backup <id>`, `a fresh dump`, `nothing (empty)`, or null until filled. */
  filledFrom: string | null;
}

/** One pull request's preview in a project: every service of the project that previews it lives in its `pr-<n>` environment. */
export interface PreviewRecord {
  id: string;
  projectId: string;
  number: number;
  provider: string;
  title: string | null;
  /** The environment the services were copied from. */
  sourceEnvironmentId: string;
  /** `pr-<n>`; null for a limited preview, or before it is made. */
  environmentId: string | null;
  services: PreviewService[];
  databases: PreviewDatabase[];
  headSha: string;
  headBranch: string;
  headRepository: string | null;
  /** A fork's clone URL when the head is fetched from it (Bitbucket publishes no pull-request ref); null: the parent's repository. */
  fetchUrl: string | null;
  /** The ref the head is fetched through (`refs/pull/7/head`). */
  fetchRef: string | null;
  fromFork: boolean;
  status: PreviewStatus;
  phase: PreviewPhase;
  /** The deployments of the current round (the databases', then the services'): the preview is ready when they all went live. */
  deploymentIds: string[];
  statusReason: string | null;
  /** The first previewed service's generated URL. */
  url: string | null;
  /** The last push to the pull request: the TTL counts from it. */
  lastPushAt: Date;
  createdAt: Date;
  updatedAt: Date;
}
