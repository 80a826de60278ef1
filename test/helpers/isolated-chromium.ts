import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

const FORWARDER = path.join(import.meta.dirname, 'loopback-forwarder.mjs');

export interface IsolatedChromium {
  /** What to launch: a script that starts Chromium in its own network namespace, or Chromium itself (see `isolated`). */
  executablePath: string;
  /** False when this machine cannot make a network namespace (not root, no `unshare`/`ip`): Chromium runs as is. */
  isolated: boolean;
  close(): Promise<void>;
}

/**
 * Chromium in a network namespace of its own, reaching the given ports of this machine's loopback (the
 * platform, Caddy) through Unix sockets, under the same `127.0.0.1:<port>` origins.
 *
 * Why: Chromium's network stack watches every interface's addresses (netlink) and fails each request still
 * waiting for a connection with net::ERR_NETWORK_CHANGED whenever an address appears or goes anywhere. Docker
 * adds and removes bridge and veth addresses each time a network or container starts or stops: the platform's
 * own deployments do, and on a shared CI machine so do the test files beside this one. A screen's code fetched at
 * that instant fails to load (the router then shows its error page instead of the screen: the dashboard e2e's
 * intermittent failure at step 3, where the deploy starts a container as the deployment screen loads). In a
 * namespace of its own the browser sees only its loopback, so no change of the host's interfaces reaches it.
 */
export async function isolatedChromium(chromiumPath: string, ports: number[]): Promise<IsolatedChromium> {
  try {
    execFileSync('unshare', ['--net', '--', 'ip', 'link', 'set', 'lo', 'up'], { stdio: 'pipe', timeout: 10_000 });
  } catch (error) {
    console.warn(
      `Chromium runs in this machine's network namespace (none of its own: ${String(error).split('\n')[0]}); Docker's interface changes can fail its requests with ERR_NETWORK_CHANGED`,
    );
    return { executablePath: chromiumPath, isolated: false, close: async () => {} };
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-chromium-netns-'));
  const open = new Set<net.Socket>();
  const bridges = await Promise.all(
    ports.map(
      (port) =>
        new Promise<net.Server>((resolve, reject) => {
          const server = net.createServer((inner) => {
            const outer = net.connect(port, '127.0.0.1');
            for (const socket of [inner, outer]) {
              open.add(socket);
              socket.on('close', () => open.delete(socket));
            }
            inner.on('error', () => outer.destroy());
            outer.on('error', () => inner.destroy());
            inner.pipe(outer);
            outer.pipe(inner);
          });
          server.once('error', reject);
          server.listen(path.join(dir, `${port}.sock`), () => resolve(server));
        }),
    ),
  );
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  const inner = path.join(dir, 'in-namespace.sh');
  writeFileSync(
    inner,
    [
      '#!/bin/sh',
      'set -e',
      'ip link set lo up',
      // The forwarder must not hold the DevTools pipe (fds 3 and 4) that playwright reads the browser's exit from.
      `${quote(process.execPath)} ${quote(FORWARDER)} ${quote(dir)} ${ports.join(' ')} 3>&- 4>&- &`,
      'n=0',
      `while [ ! -e ${quote(path.join(dir, 'ready'))} ]; do`,
      '  n=$((n + 1))',
      '  if [ "$n" -gt 400 ]; then echo "the loopback forwarder did not start" >&2; exit 1; fi',
      '  sleep 0.05',
      'done',
      `exec ${quote(chromiumPath)} "$@"`,
      '',
    ].join('\n'),
  );
  const launcher = path.join(dir, 'chromium');
  writeFileSync(launcher, ['#!/bin/sh', `exec unshare --net -- /bin/sh ${quote(inner)} "$@"`, ''].join('\n'));
  chmodSync(launcher, 0o755);
  return {
    executablePath: launcher,
    isolated: true,
    close: async () => {
      for (const socket of open) socket.destroy();
      await Promise.all(bridges.map((server) => new Promise((resolve) => server.close(resolve))));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
