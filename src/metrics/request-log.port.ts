/** Requests the proxy answered for one hostname since the last drain. */
export interface RequestCount {
  hostname: string;
  requests: number;
  /** Answers with a 5xx status. */
  errors5xx: number;
}

/**
 * The proxy's access data, read incrementally: each drain returns what was logged since the one
 * before (the first drain of a process starts at the end, so a restart never counts a line twice).
 */
export interface RequestLogSource {
  drain(signal?: AbortSignal): Promise<RequestCount[]>;
}
