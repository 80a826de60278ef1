/** Asks whether a freshly started container serves. */
export interface HealthProbe {
  /** The HTTP status of GET http://host:port/path, or null when nothing answered. */
  http(host: string, port: number, path: string, signal: AbortSignal): Promise<number | null>;
  tcp(host: string, port: number, signal: AbortSignal): Promise<boolean>;
}
