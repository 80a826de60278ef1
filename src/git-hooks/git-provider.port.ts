import type { HookEvent, HookProvider, HookRequest, StatusProvider } from './hook-event.js';

/**
 * One sender of deliveries (a git host, the generic Standard Webhooks hook, a registry): how its headers
 * name it, how it signs, and what its payloads say. One adapter per provider, adapters/git/<provider>.git-provider.ts.
 */
export interface GitProvider {
  readonly id: HookProvider;
  /** Whether the request's headers say it comes from this provider (checked in the order the providers are given). */
  recognizes(request: HookRequest): boolean;
  /** The provider's name of the event (`push`, `Merge Request Hook`, `repo:push`...), for the delivery list. */
  eventName(request: HookRequest): string;
  /** The provider's id of the delivery, the same on its retries; null when it sends none. */
  deliveryId(request: HookRequest): string | null;
  /**
   * Checks the signature over the raw body with the project's secret, in constant time; throws HookRefused
   * (unsigned, wrong signature, outside the timestamp tolerance). A provider that cannot sign (Docker Hub)
   * returns `false`: the delivery is then only a hint that the platform checks for itself.
   */
  verify(request: HookRequest, secret: string): boolean;
  /** The event, from the verified body parsed as JSON; throws HookMalformed when it is not the provider's shape. */
  parse(request: HookRequest, payload: unknown): HookEvent[];
}

export type CommitState = 'pending' | 'success' | 'failure' | 'error';

/** A commit status as the platform reports it; each adapter spells it in its host's words. */
export interface CommitStatus {
  state: CommitState;
  /** Names the check on the host's page (`slipway/<service>`). */
  context: string;
  description: string;
  /** The deployment's page, or a preview's URL. */
  targetUrl: string | null;
}

/** Where a status goes: the host's API and the commit in the repository it addresses. */
export interface CommitStatusTarget {
  provider: StatusProvider;
  /** The API root (`https://api.github.com`, `https://gitlab.example.com/api/v4`...). */
  apiUrl: string;
  /** `owner/name` (GitLab's namespace path when no id is known). */
  repository: string;
  /** GitLab's project id, when the delivery gave one. */
  repositoryId: string | null;
  sha: string;
  /** The branch (GitLab takes it with the status). */
  ref: string | null;
  token: string;
}

/** Posts commit statuses to one host's API (timeout and AbortSignal honoured); rejects with the host's reason. */
export interface CommitStatusApi {
  readonly provider: StatusProvider;
  post(target: CommitStatusTarget, status: CommitStatus, signal: AbortSignal): Promise<void>;
}

/** A branch's head on a remote, asked with `git ls-remote` (argv, timeout): what polling compares. */
export interface GitRemote {
  /** The commit `branch` points at, or null when the remote has no such branch. */
  headOf(request: { url: string; branch: string; token: string | null; signal: AbortSignal }): Promise<string | null>;
}

/** A registry's digest of a tag (the Registry HTTP API's manifest digest): what image polling compares. */
export interface ImageRegistry {
  /** The digest `image` (`name:tag`, `host/name:tag`) points at now; rejects with the registry's reason. */
  digestOf(image: string, signal: AbortSignal): Promise<string>;
}
