import { createServer, connect, type Server, type Socket } from 'node:net';
import type { PortForwarder } from '../../src/deployments/port-forwarder.port.js';

interface Target {
  host: string;
  port: number;
}

interface Pair {
  client: Socket;
  upstream: Socket;
  target: Target;
  /** Last byte either way: a pair to a replaced container closes once it has been quiet a while. */
  lastActivity: number;
}

interface Listener {
  server: Server;
  bindHost: string;
  target: Target;
  pairs: Set<Pair>;
  retireTimer: NodeJS.Timeout | null;
}

/** A keep-alive connection to a replaced container this long without a byte is between requests. */
const RETIRE_IDLE_MS = 1_000;

/**
 * One TCP listener per host port on 127.0.0.1 (every interface when public), forwarding each connection to the service's
 * current container. Switching the target affects new connections only: in-flight ones finish
 * on the old container, and idle keep-alive ones are closed so their clients come back to the new one.
 */
export class TcpPortForwarder implements PortForwarder {
  private readonly listeners = new Map<number, Listener>();

  constructor(
    private readonly bindHost = '127.0.0.1',
    private readonly publicHost = '0.0.0.0',
  ) {}

  async set(hostPort: number, target: { host: string; port: number } | null, exposure: 'local' | 'public' = 'local'): Promise<void> {
    let existing = this.listeners.get(hostPort);
    const bindHost = exposure === 'public' ? this.publicHost : this.bindHost;
    // Another exposure is another listening address: the port is closed and opened again there.
    if (existing && (!target || existing.bindHost !== bindHost)) {
      await this.close(hostPort, existing);
      existing = undefined;
    }
    if (!target) return;
    if (existing) {
      if (existing.target.host !== target.host || existing.target.port !== target.port) {
        existing.target = target;
        this.retireIdle(existing);
      }
      return;
    }
    const listener: Listener = { server: createServer(), bindHost, target, pairs: new Set(), retireTimer: null };
    listener.server.on('connection', (client) => this.forward(listener, client));
    await new Promise<void>((resolve, reject) => {
      listener.server.once('error', reject);
      listener.server.listen({ port: hostPort, host: bindHost }, () => {
        listener.server.off('error', reject);
        resolve();
      });
    });
    this.listeners.set(hostPort, listener);
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.listeners.entries()].map(([port, listener]) => this.close(port, listener)));
  }

  private forward(listener: Listener, client: Socket): void {
    const target = listener.target;
    const upstream = connect({ host: target.host, port: target.port });
    const pair: Pair = { client, upstream, target, lastActivity: Date.now() };
    listener.pairs.add(pair);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const done = () => {
      listener.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    const touch = () => {
      pair.lastActivity = Date.now();
    };
    client.on('error', done).on('close', done).on('data', touch);
    upstream.on('error', done).on('close', done).on('data', touch);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /**
   * Connections still going to the previous container close once idle (between requests), so
   * keep-alive clients reconnect to the new one and the old one drains; busy ones finish first.
   */
  private retireIdle(listener: Listener): void {
    if (listener.retireTimer) return;
    const sweep = () => {
      const stale = [...listener.pairs].filter((p) => p.target !== listener.target);
      for (const pair of stale) {
        if (Date.now() - pair.lastActivity >= RETIRE_IDLE_MS) {
          pair.client.end();
          pair.upstream.end();
        }
      }
      listener.retireTimer = stale.length > 0 ? setTimeout(sweep, RETIRE_IDLE_MS / 4) : null;
      listener.retireTimer?.unref();
    };
    listener.retireTimer = setTimeout(sweep, RETIRE_IDLE_MS / 4);
    listener.retireTimer.unref();
  }

  private async close(port: number, listener: Listener): Promise<void> {
    this.listeners.delete(port);
    if (listener.retireTimer) clearTimeout(listener.retireTimer);
    for (const pair of listener.pairs) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    await new Promise<void>((resolve) => listener.server.close(() => resolve()));
  }
}
