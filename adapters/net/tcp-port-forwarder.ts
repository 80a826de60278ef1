import { createServer, connect, type Server, type Socket } from 'node:net';
import type { PortForwarder } from '../../src/ports/port-forwarder.port.js';

interface Listener {
  server: Server;
  target: { host: string; port: number };
  sockets: Set<Socket>;
}

/**
 * One TCP listener per host port on 127.0.0.1, forwarding each connection to the service's
 * current container. Switching the target affects new connections only: in-flight ones finish
 * on the old container, which is what makes a redeploy seamless on the host port.
 */
export class TcpPortForwarder implements PortForwarder {
  private readonly listeners = new Map<number, Listener>();

  constructor(private readonly bindHost = '127.0.0.1') {}

  async set(hostPort: number, target: { host: string; port: number } | null): Promise<void> {
    const existing = this.listeners.get(hostPort);
    if (!target) {
      if (existing) await this.close(hostPort, existing);
      return;
    }
    if (existing) {
      existing.target = target;
      return;
    }
    const listener: Listener = { server: createServer(), target, sockets: new Set() };
    listener.server.on('connection', (client) => this.forward(listener, client));
    await new Promise<void>((resolve, reject) => {
      listener.server.once('error', reject);
      listener.server.listen({ port: hostPort, host: this.bindHost }, () => {
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
    const upstream = connect({ host: listener.target.host, port: listener.target.port });
    listener.sockets.add(client);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const done = () => {
      listener.sockets.delete(client);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', done).on('close', done);
    upstream.on('error', done).on('close', done);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  private async close(port: number, listener: Listener): Promise<void> {
    this.listeners.delete(port);
    for (const socket of listener.sockets) socket.destroy();
    await new Promise<void>((resolve) => listener.server.close(() => resolve()));
  }
}
