import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { TcpPortForwarder } from '../../adapters/net/tcp.port-forwarder.js';
import { freePort } from '../helpers/caddy.js';

const servers: Server[] = [];
const forwarder = new TcpPortForwarder();

afterEach(async () => {
  await forwarder.closeAll();
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** A keep-alive HTTP server answering `name` (600 ms late for /slow). */
async function backend(name: string): Promise<{ port: number }> {
  const server = createServer((req, res) => {
    setTimeout(() => res.end(name), req.url === '/slow' ? 600 : 0);
  });
  server.keepAliveTimeout = 60_000;
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port };
}

function get(port: number, path: string, agent: Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, agent }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve(text));
    })
      .on('error', reject)
      .end();
  });
}

it('after a switch, a request in flight finishes on the old target and idle keep-alive connections move to the new one', async () => {
  const [oldOne, newOne] = [await backend('old'), await backend('new')];
  const hostPort = await freePort();
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  await forwarder.set(hostPort, { host: '127.0.0.1', port: oldOne.port });
  expect(await get(hostPort, '/', agent)).toBe('old');

  const inFlight = get(hostPort, '/slow', new Agent({ keepAlive: true }));
  await new Promise((resolve) => setTimeout(resolve, 100));
  await forwarder.set(hostPort, { host: '127.0.0.1', port: newOne.port });
  expect(await inFlight).toBe('old');

  // The agent's idle connection is still piped to the old server until the forwarder retires it.
  await new Promise((resolve) => setTimeout(resolve, 1_600));
  expect(await get(hostPort, '/', agent)).toBe('new');
  expect(await get(hostPort, '/', new Agent())).toBe('new');
  agent.destroy();
});

/** An address of this machine other than loopback: where a stranger on the network would connect. */
async function externalAddress(): Promise<string> {
  const { networkInterfaces } = await import('node:os');
  const found = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal);
  if (!found) throw new Error('this machine has no non-loopback IPv4 address to test exposure with');
  return found.address;
}

function connects(host: string, port: number): Promise<boolean> {
  return import('node:net').then(
    ({ connect }) =>
      new Promise((resolve) => {
        const socket = connect({ host, port });
        socket.once('connect', () => {
          socket.destroy();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
      }),
  );
}

it('listens on loopback only unless the port is public, and moves between the two when told', async () => {
  const { port: target } = await backend('db');
  const hostPort = await freePort();
  const outside = await externalAddress();
  await forwarder.set(hostPort, { host: '127.0.0.1', port: target });
  expect(await connects('127.0.0.1', hostPort)).toBe(true);
  expect(await connects(outside, hostPort)).toBe(false);

  await forwarder.set(hostPort, { host: '127.0.0.1', port: target }, 'public');
  expect(await connects(outside, hostPort)).toBe(true);
  expect(await get(hostPort, '/', new Agent())).toBe('db');

  await forwarder.set(hostPort, { host: '127.0.0.1', port: target }, 'local');
  expect(await connects(outside, hostPort)).toBe(false);
  expect(await connects('127.0.0.1', hostPort)).toBe(true);
});
