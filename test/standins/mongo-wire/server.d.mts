/** Types of server.mjs (the MongoDB wire-protocol stand-in) for the TypeScript tests. */
export interface StandinOptions {
  /** 0 picks a free port; default 27017. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Where each database's file is written; omitted: in memory only. */
  dbpath?: string;
  /** With rootPassword: authentication is required; the user is created when the data directory is new. */
  rootUser?: string;
  rootPassword?: string;
  /** Requires authentication even without a root user (mongod --auth). */
  auth?: boolean;
  /** Enables the `sleep` test command (mongod --setParameter enableTestCommands=1). */
  testCommands?: boolean;
  /** JSON log lines on stdout, as mongod writes them. */
  log?: boolean;
}

export interface StandinServer {
  port: number;
  host: string;
  /** Stops listening, closes every connection, and waits for pending file writes. */
  close(): Promise<void>;
}

export function startServer(options?: StandinOptions): Promise<StandinServer>;
export function crc32c(bytes: Uint8Array): number;
