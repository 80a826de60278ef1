/**
 * What a verified delivery says, whoever sent it: each provider's adapter (adapters/git/) turns its own
 * payload into these, so matching, deploying and previews never read a provider's field names.
 */

/** The senders the one project URL tells apart by their headers (docs/push-to-deploy.md). */
export const HOOK_PROVIDERS = ['github', 'gitlab', 'gitea', 'forgejo', 'bitbucket', 'generic', 'dockerhub'] as const;
export type HookProvider = (typeof HOOK_PROVIDERS)[number];
/** The git hosts whose commit status API the platform can post to. */
export const STATUS_PROVIDERS = ['github', 'gitlab', 'gitea', 'forgejo', 'bitbucket'] as const;
export type StatusProvider = (typeof STATUS_PROVIDERS)[number];

export function isStatusProvider(provider: string | null): provider is StatusProvider {
  return (STATUS_PROVIDERS as readonly string[]).includes(provider ?? '');
}

/** A repository as a delivery names it: its path on its host and the URLs it is known by. */
export interface HookRepository {
  /** `owner/name` (GitLab: the full namespace path); null when the payload gives none. */
  fullName: string | null;
  /** Clone URLs (HTTP and SSH) and the web URL, as given; compared normalised (see repositoryKeys). */
  urls: string[];
  /** The host's own id, where its status API addresses repositories by it (GitLab's project id). */
  id: string | null;
}

export interface HookCommit {
  message: string | null;
  author: string | null;
}

/** A branch moved (or was created or deleted); tags come as `branch: null`. */
export interface PushEvent {
  kind: 'push';
  repository: HookRepository;
  branch: string | null;
  /** The commit the branch points at now; null when it was deleted. */
  sha: string | null;
  commit: HookCommit | null;
  /** Every path the pushed commits added, changed or removed; null when the payload does not list them all. */
  changedFiles: string[] | null;
}

export const PULL_REQUEST_ACTIONS = ['opened', 'reopened', 'updated', 'closed', 'merged'] as const;
export type PullRequestAction = (typeof PULL_REQUEST_ACTIONS)[number];

/** A pull (merge) request opened, given new commits, reopened, closed or merged. */
export interface PullRequestEvent {
  kind: 'pull_request';
  action: PullRequestAction;
  number: number;
  /** The repository it asks to merge into, and the branch. */
  repository: HookRepository;
  baseBranch: string;
  head: {
    /** Bitbucket gives an abbreviated hash: the build resolves it from `branch`. */
    sha: string;
    branch: string;
    repository: HookRepository;
  };
  /** The head lives in another repository than the base: code written by someone outside it. */
  fromFork: boolean;
  /** Where the host publishes the head in the base repository (`refs/pull/7/head`); null when it does not. */
  headRef: string | null;
  title: string | null;
  commit: HookCommit | null;
}

/** A registry says a tag was pushed: a hint to look at the tag's digest, never a reason to deploy on its word alone. */
export interface ImagePushEvent {
  kind: 'image_push';
  /** The image's repository as the registry names it (`namespace/name`, `library/name` for official images). */
  repository: string;
  tag: string;
}

/** A provider checking the endpoint (GitHub's `ping`). */
export interface PingEvent {
  kind: 'ping';
}

/** Verified, but nothing the platform acts on: answered 202 and recorded with `reason`. */
export interface IgnoredEvent {
  kind: 'ignored';
  reason: string;
}

export type HookEvent = PushEvent | PullRequestEvent | ImagePushEvent | PingEvent | IgnoredEvent;

/** The bytes and headers of one delivery, headers by lower-case name. */
export interface HookRequest {
  headers: Readonly<Record<string, string | undefined>>;
  body: Buffer;
  receivedAt: Date;
}

/** A delivery that is not the provider's, not signed, or not signed with the project's secret: answered 401. */
export class HookRefused extends Error {}

/** A body that is not what the provider sends for its event (malformed JSON, a missing field): answered 400. */
export class HookMalformed extends Error {}
