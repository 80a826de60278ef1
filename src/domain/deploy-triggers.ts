import { ValidationError } from './errors.js';

/**
 * What makes a service deploy besides a person: pushes (a project webhook), branch or digest polling,
 * and pull-request previews. docs/push-to-deploy.md describes each.
 */

/** Branch polling's floor: a git host is not asked more often than this per service. */
export const MIN_POLL_INTERVAL_SECONDS = 30;
export const MAX_POLL_INTERVAL_SECONDS = 24 * 3600;

export const PREVIEW_DATABASE_MODES = ['copy', 'empty', 'shared'] as const;
export type PreviewDatabaseMode = (typeof PREVIEW_DATABASE_MODES)[number];

/** A variable a preview gets on top of (or instead of) the parent's: stored sealed, like every variable. */
export interface PreviewVariable {
  key: string;
  valueEncrypted: string;
  secret: boolean;
}

/** A service's pull-request previews (`previews` on the service). */
export interface PreviewSettings {
  enabled: boolean;
  /** Open previews of the service at once; past it a new pull request gets a status saying so. */
  maxOpen: number;
  /** Whether a pull request from a fork gets a preview (its code runs on this server). */
  fromForks: boolean;
  /** A preview with no push for this long is torn down; null: only closing or merging does. */
  ttlHours: number | null;
  /** What each database the service references becomes in a preview. */
  databases: PreviewDatabaseMode;
  /** Set on the preview's copy of the service (e.g. PREVIEW=true). */
  variables: PreviewVariable[];
}

export const DEFAULT_PREVIEW_SETTINGS: PreviewSettings = {
  enabled: false,
  maxOpen: 5,
  fromForks: false,
  ttlHours: null,
  databases: 'copy',
  variables: [],
};
export const MAX_OPEN_PREVIEWS = 20;
export const MAX_PREVIEW_VARIABLES = 100;

/** The variables a preview's services get from the platform, referenced as `${PREVIEW_URL}` and so on. */
export const PREVIEW_VARIABLE_KEYS = ['PREVIEW_URL', 'PR_NUMBER', 'PR_BRANCH'] as const;

/** A preview environment's name: `pr-<n>` (the same number in every project: hosts number their own pull requests). */
export function previewEnvironmentName(number: number): string {
  return `pr-${number}`;
}

export function assertPollInterval(seconds: number | null, field = 'pollIntervalSeconds'): number | null {
  if (seconds === null) return null;
  if (!Number.isInteger(seconds) || seconds < MIN_POLL_INTERVAL_SECONDS || seconds > MAX_POLL_INTERVAL_SECONDS)
    throw new ValidationError(
      field,
      `pollIntervalSeconds is a whole number of seconds from ${MIN_POLL_INTERVAL_SECONDS} to ${MAX_POLL_INTERVAL_SECONDS}, or null to stop polling`,
    );
  return seconds;
}

/** How a deployment came about beyond its trigger: the commit's story and where to report back. */
export interface DeploymentOrigin {
  /** The sender: `github`, `gitlab`, `gitea`, `forgejo`, `bitbucket`, `generic`, `dockerhub`, or `git` / `registry` for polling. */
  provider: string | null;
  /** The delivery that made it (a git host's delivery id). */
  deliveryId: string | null;
  commitMessage: string | null;
  commitAuthor: string | null;
  /** Where the commit is fetched from when the host does not hand it out by hash (`refs/pull/7/head`). */
  fetchRef: string | null;
  /** A fork's repository the commit lives in (a Bitbucket pull request from a fork); null: the service's own. */
  fetchUrl?: string | null;
  /** An image deployment runs exactly this digest of the service's image (`name@sha256:...`). */
  imageDigest: string | null;
  /** The preview it deploys, if any. */
  previewId: string | null;
}

/** Commit messages are kept to their first lines: a deployment row is not a commit log. */
export function clipCommitMessage(message: string | null): string | null {
  if (message === null) return null;
  const trimmed = message.trim();
  return trimmed.length <= 1000 ? trimmed : `${trimmed.slice(0, 999)}…`;
}
