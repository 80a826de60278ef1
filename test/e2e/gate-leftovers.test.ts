import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IptablesTrafficGate } from '../../adapters/net/iptables.traffic-gate.js';
import { overlaps } from '../../src/deployments/slot-subnets.js';
import { quietPort, startCaddy, waitUntilServed, type CaddyProcess } from '../helpers/caddy.js';
import { deploy } from '../helpers/deployments.js';
import { docker, httpText, ownPortRange, provisionDocker } from '../helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/**
 * What earlier installs leave on a host, met by a later one (real iptables, Docker and Caddy): an
 * install that is gone (its network removed with its data) left its gate chains, naming the subnet
 * the later install is given, and its gate responder on the later one's gate port; a live install's
 * rules name a subnet no network has any more, and its responder holds a port. The later install
 * removes the leftovers at start and serves through its slots; it never takes the subnet live rules
 * name, and refuses, in one line, a gate port another install or process holds.
 */
const run = promisify(execFile);
const id = () => randomBytes(6).toString('hex');
const gone = id();
const live = id();
const liveNetwork = `slipway-slots-${live}`;
const ours = (instance: string) => new RegExp(`SLIPWAY-(EDGE|GATE)-${instance.toUpperCase()}\\b`);

let caddy: CaddyProcess;
let httpPort: number;
const servers: ServerProcess[] = [];
let holder: Server | null = null;
/** /24s of 172.16.0.0/16 that nothing on this host uses: from the top, away from `auto`'s /22s taken from the bottom. */
const free: string[] = [];

async function iptablesRules(): Promise<string[]> {
  const rules: string[] = [];
  for (const table of ['filter', 'nat']) rules.push(...(await run('iptables', ['--wait', '-t', table, '-S'])).stdout.split('\n'));
  return rules;
}

async function usedSubnets(): Promise<string[]> {
  const networks = (await docker('network', 'ls', '-q')).split('\n').filter(Boolean);
  const docker_ = networks.length
    ? (await docker('network', 'inspect', '--format', '{{range .IPAM.Config}}{{.Subnet}} {{end}}', ...networks)).split(/\s+/)
    : [];
  const rules = (await new IptablesTrafficGate({ instanceId: 'probe', gatePort: 1 }).installs()).flatMap((i) => i.subnets);
  return [...docker_, ...rules].filter((s) => /^\d+\.\d+\.\d+\.\d+\/\d+$/.test(s));
}

/** A gate responder as an install runs it: busybox httpd on 127.0.0.1:<port>, host network. */
async function gateContainer(instance: string, port: number): Promise<void> {
  await docker(
    'run',
    '-d',
    '--name',
    `slipway-gate-${instance}`,
    '--network',
    'host',
    '--label',
    'slipway.managed=true',
    '--label',
    `slipway.role=gate:${port}`,
    'busybox:1',
    'httpd',
    '-f',
    '-p',
    `127.0.0.1:${port}`,
    '-h',
    '/tmp',
  );
  for (let i = 0; i < 50 && !(await httpText(`http://127.0.0.1:${port}/`, 500)); i++) await new Promise((r) => setTimeout(r, 100));
}

async function containerExists(name: string): Promise<boolean> {
  return docker('container', 'inspect', name).then(
    () => true,
    () => false,
  );
}

/** Starts a platform that must refuse to start; resolves with what it printed. */
async function refusedStart(env: Record<string, string>): Promise<string> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-e2e-refused-'));
  try {
    const started = await startServerProcess({ ...caddy.platformEnv, ...env }, { dataDir, token: `boot_${id()}` }).then(
      (server) => {
        servers.push(server);
        return null;
      },
      (error: Error) => error.message,
    );
    if (started === null) throw new Error('the platform started');
    return started;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

beforeAll(async () => {
  await provisionDocker({ images: 'busybox' });
  await run('bash', ['test/provision/caddy.sh']);
  caddy = await startCaddy();
  httpPort = await quietPort();
  const used = await usedSubnets();
  for (let third = 251; third > 128 && free.length < 3; third--) {
    const candidate = `172.16.${third}.0/24`;
    if (!used.some((subnet) => overlaps(candidate, subnet))) free.push(candidate);
  }
  expect(free).toHaveLength(3);
}, 10 * 60_000);

afterAll(async () => {
  holder?.close();
  for (const server of servers) await server.dispose();
  for (const instance of [gone, live]) {
    await docker('rm', '-f', `slipway-gate-${instance}`).catch(() => undefined);
    await new IptablesTrafficGate({ instanceId: instance, gatePort: 1 }).remove().catch(() => undefined);
  }
  await docker('network', 'rm', liveNetwork).catch(() => undefined);
  await caddy?.stop();
}, 120_000);

describe('an install after others on the same host', () => {
  it("removes a gone install's rules and gate at start, takes the subnet they named and the port its gate held, and serves through its slots", async () => {
    const [subnet] = free as [string];
    const gatePort = await quietPort();
    // The gone install: rules with one open slot, the REJECT for the rest of the subnet, and its gate.
    await new IptablesTrafficGate({ instanceId: gone, gatePort }).sync(subnet, [{ ip: subnet.replace(/0\/24$/, '9'), port: 3000 }]);
    await gateContainer(gone, gatePort);
    expect((await iptablesRules()).filter((r) => ours(gone).test(r)).length).toBeGreaterThan(0);

    const server = await startServerProcess({
      ...caddy.platformEnv,
      PROXY_HTTP_PORT: String(httpPort),
      PROXY_GATE_PORT: String(gatePort),
      SLOT_SUBNET: subnet,
      BUILD_CONCURRENCY: '1',
      STOP_GRACE_SECONDS: '1',
      HOST_PORT_RANGE: ownPortRange(),
    });
    servers.push(server);
    const instance = /"instanceId":"([a-z0-9]+)"/.exec(server.output())![1]!;
    expect((await iptablesRules()).filter((r) => ours(gone).test(r))).toEqual([]);
    expect(await containerExists(`slipway-gate-${gone}`)).toBe(false);
    expect(server.output()).toContain('removed the packet-filter rules of an install whose slot network is gone');
    expect(server.output()).toContain(
      `removed the traffic gate of an install whose slot network is gone","container":"slipway-gate-${gone}"`,
    );

    // Its own slot network on that subnet, and its own responder on that port, before it deploys.
    const slotNetwork = `slipway-slots-${instance}`;
    for (let i = 0; i < 100; i++) {
      const has = await docker('network', 'inspect', '--format', '{{range .IPAM.Config}}{{.Subnet}}{{end}}', slotNetwork).catch(() => '');
      if (has && (await containerExists(`slipway-gate-${instance}`))) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(await docker('network', 'inspect', '--format', '{{range .IPAM.Config}}{{.Subnet}}{{end}}', slotNetwork)).toBe(subnet);
    const call = api(server.url, server.token);
    const project = (await call('POST', '/api/projects', { name: `leftovers-${Date.now()}` })).json.project;
    const created = await call('POST', `/api/projects/${project.id}/services`, {
      name: 'web',
      repoUrl: 'container-image',
      containerImage: 'busybox:latest',
      internalPort: 3000,
      startCommand: 'mkdir -p /www && echo served-through-a-slot > /www/index.html && exec httpd -f -p 3000 -h /www',
    });
    expect(created.status, created.text).toBe(201);
    const service = created.json.service;
    expect((await call('POST', `/api/services/${service.id}/domains`, { hostname: 'leftovers.example.test' })).status).toBe(201);
    const result = await deploy(call, service.id, 120_000);
    expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
    const slot = await docker('inspect', '--format', '{{ index .Config.Labels "slipway.slot" }}', result.deployment.containerName!);
    expect(overlaps(`${slot}/32`, subnet)).toBe(true);
    // The gone install's REJECT on this subnet would have made this a 502.
    const served = await waitUntilServed(httpPort, 'leftovers.example.test', { status: 200, text: /served-through-a-slot/ }, 20_000);
    expect(served.response.status).toBe(200);
  }, 240_000);

  it("keeps a live install's rules and gate, never takes the subnet its rules name, and refuses the port its gate holds", async () => {
    const [, liveSubnet, namedOnly] = free as [string, string, string];
    const livePort = await quietPort();
    await docker(
      'network',
      'create',
      '--label',
      'slipway.managed=true',
      '--label',
      `slipway.instance=${live}`,
      '--label',
      'slipway.role=slots',
      '--subnet',
      liveSubnet,
      liveNetwork,
    );
    const liveGate = new IptablesTrafficGate({ instanceId: live, gatePort: livePort });
    // Rules naming its network's subnet, and a jump left from an earlier network of its own.
    await liveGate.sync(liveSubnet, []);
    await liveGate.sync(namedOnly, []);
    await gateContainer(live, livePort);

    // The port its gate holds: refused in one line, naming the holder.
    const refused = await refusedStart({ PROXY_GATE_PORT: String(livePort) });
    const line = `slipway: PROXY_GATE_PORT ${livePort} on 127.0.0.1 is taken by the traffic gate of another Slipway install on this host (container slipway-gate-${live}): each install on a host needs a gate port of its own; set PROXY_GATE_PORT to a free port.`;
    expect(refused).toContain(`server exited with 1 before listening:\n`);
    expect(refused.split('\n').filter((l) => l.startsWith('slipway: '))).toEqual([line]);

    // A port another process holds: the same, saying so.
    const otherPort = await quietPort();
    holder = createServer();
    await new Promise<void>((resolve) => holder!.listen(otherPort, '127.0.0.1', resolve));
    const byProcess = await refusedStart({ PROXY_GATE_PORT: String(otherPort) });
    expect(byProcess).toContain(
      `slipway: PROXY_GATE_PORT ${otherPort} on 127.0.0.1 is taken by another process: each install on a host needs a gate port of its own; set PROXY_GATE_PORT to a free port.`,
    );

    // The subnet its rules name, though no network has it: never taken, and said why.
    const server = await startServerProcess({ ...caddy.platformEnv, PROXY_GATE_PORT: String(await quietPort()), SLOT_SUBNET: namedOnly });
    servers.push(server);
    const instance = /"instanceId":"([a-z0-9]+)"/.exec(server.output())![1]!;
    const said = `SLOT_SUBNET ${namedOnly} overlaps ${namedOnly}, which the packet-filter rules of the install of the network ${liveNetwork} name; choose another SLOT_SUBNET, or auto`;
    for (let i = 0; i < 100 && !server.output().includes(said); i++) await new Promise((r) => setTimeout(r, 200));
    expect(server.output()).toContain(
      `"msg":"traffic slots unavailable: the proxy dials containers directly until they are","error":"${said}"`,
    );
    expect(await docker('network', 'inspect', `slipway-slots-${instance}`).catch(() => 'none')).toBe('none');

    // The live install kept everything.
    const rules = (await iptablesRules()).filter((r) => ours(live).test(r));
    expect(rules).toEqual(
      expect.arrayContaining([expect.stringContaining(`-d ${liveSubnet}`), expect.stringContaining(`-d ${namedOnly}`)]),
    );
    expect(await containerExists(`slipway-gate-${live}`)).toBe(true);
  }, 180_000);
});
