import { request } from 'node:http';
import { connect } from 'node:net';
import type { HealthProbe } from '../../src/deployments/health-probe.port.js';

const ATTEMPT_TIMEOUT_MS = 2000;

export class NetHealthProbe implements HealthProbe {
  http(host: string, port: number, path: string, signal: AbortSignal): Promise<number | null> {
    return new Promise((resolve) => {
      const req = request(
        {
          host,
          port,
          path,
          method: 'GET',
          signal: AbortSignal.any([signal, AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)]),
          headers: { 'user-agent': 'slipway-health' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? null);
        },
      );
      req.on('error', () => resolve(null));
      req.end();
    });
  }

  tcp(host: string, port: number, signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = connect({ host, port, signal: AbortSignal.any([signal, AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)]) });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
  }
}
