import { createServer } from 'node:net';
import type { PortProbe } from '../../src/projects/port-probe.port.js';

/** A port is free when we can bind it on every interface for a moment. */
export class NetPortProbe implements PortProbe {
  isFree(port: number): Promise<boolean> {
    return new Promise((resolve) => {
      const server = createServer();
      const timer = setTimeout(() => {
        server.close();
        resolve(false);
      }, 1000);
      server.once('error', () => {
        clearTimeout(timer);
        resolve(false);
      });
      server.listen({ port, host: '0.0.0.0', exclusive: true }, () => {
        clearTimeout(timer);
        server.close(() => resolve(true));
      });
    });
  }
}
