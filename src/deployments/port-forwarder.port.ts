/**
 * Serves a service's host port by forwarding TCP connections to its current container, so a
 * redeploy can switch containers without a gap (Docker cannot move a published port).
 */
export interface PortForwarder {
  /**
   * Points `hostPort` at `target`, opening the listener when needed; null closes it. `exposure`:
   * `local` listens on the loopback address only, `public` on every interface (a database made public).
   */
  set(hostPort: number, target: { host: string; port: number } | null, exposure?: 'local' | 'public'): Promise<void>;
  closeAll(): Promise<void>;
}
