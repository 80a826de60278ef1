import { readFile, writeFile } from 'node:fs/promises';

const SYSCTL = '/proc/sys/net/ipv4/tcp_migrate_req';

/**
 * Caddy binds a new SO_REUSEPORT socket at every configuration load and closes the old one; without
 * this kernel setting (Linux 5.14+), connections waiting in the old socket's accept queue are reset,
 * so every cutover would drop a few requests. With it, the kernel hands them to the new socket.
 */
export async function enableListenerHandover(log: (message: string, extra?: Record<string, unknown>) => void): Promise<void> {
  const current = (await readFile(SYSCTL, 'utf8').catch(() => null))?.trim();
  if (current === undefined) {
    log(
      "net.ipv4.tcp_migrate_req is not available (Linux before 5.14): a route change may reset connections waiting in Caddy's accept queue",
    );
    return;
  }
  if (current === '1') return;
  try {
    await writeFile(SYSCTL, '1');
    log("set net.ipv4.tcp_migrate_req=1 so that Caddy's configuration loads reset no waiting connection");
  } catch (error) {
    log(
      "could not set net.ipv4.tcp_migrate_req=1 (run as root, or set it with sysctl): a route change may reset connections waiting in Caddy's accept queue",
      { error: (error as Error).message },
    );
  }
}
