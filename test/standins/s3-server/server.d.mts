/** Types of server.mjs (the versitygw stand-in: s3rver behind a SigV4-checking front door) for the TypeScript tests. */
export interface StandinOptions {
  /** 0 picks a free port; default 7070. */
  port?: number;
  /** Default 0.0.0.0. */
  host?: string;
  /** Where s3rver keeps buckets and objects. */
  dir: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The region requests must be signed for; default us-east-1. */
  region?: string;
  /** A GET path answered 200 without a signature (versitygw --health); default none. */
  health?: string;
  /** One line per request: method, path without its query, status. */
  log?: (line: string) => void;
}

export interface StandinServer {
  port: number;
  host: string;
  close(): Promise<void>;
}

export interface ParsedArgs {
  host: string;
  port: number;
  dir: string;
  access: string;
  secret: string;
  region: string;
  health: string;
  quiet: boolean;
}

export function startServer(options: StandinOptions): Promise<StandinServer>;
export function parseArgs(argv: string[], env: Record<string, string | undefined>): ParsedArgs;
