import type { LogStream } from '../domain/types.js';

export interface CloneRequest {
  url: string;
  branch: string;
  /** For private repositories over HTTP(S); never written to a log or a process argument. */
  token: string | null;
  /** An empty directory to clone into. */
  dest: string;
  signal: AbortSignal;
  onLine(line: string, stream: LogStream): void;
}

export interface GitSource {
  /** A shallow clone of one branch; resolves with the commit it checked out. */
  clone(request: CloneRequest): Promise<{ commitSha: string }>;
}
