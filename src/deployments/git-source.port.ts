import type { LogStream } from '../domain/types.js';

export interface CloneRequest {
  url: string;
  branch: string;
  /** For private repositories over HTTP(S); never written to a log or a process argument. */
  token: string | null;
  /** An empty directory to clone into. */
  dest: string;
  /**
   * Exactly this commit instead of the branch's head (a push, a poll, a pull request): fetched by its
   * hash, else through `ref` (a pull request's `refs/pull/7/head`) or the branch, and refused when the
   * remote no longer has it. An abbreviated hash (Bitbucket's) is resolved from what was fetched.
   */
  commit?: { sha: string; ref: string | null } | undefined;
  signal: AbortSignal;
  onLine(line: string, stream: LogStream): void;
}

export interface GitSource {
  /** A shallow clone of one branch (or of `commit`); resolves with the commit it checked out. */
  clone(request: CloneRequest): Promise<{ commitSha: string }>;
}
