import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { type GateInstall, SLOT_DIAL_PORT, type OpenSlot, type TrafficGate } from '../../src/deployments/traffic-gate.port.js';

const CALL_TIMEOUT_MS = 10_000;
const FILTER_PREFIX = 'SLIPWAY-EDGE-';
const NAT_PREFIX = 'SLIPWAY-GATE-';
/** A chain of an install: its table's prefix, then the install's id. */
const CHAIN = /^SLIPWAY-(EDGE|GATE)-([A-Z0-9]{1,12})$/;

export interface IptablesGateOptions {
  /** Tells this installation's chains from another's on the same host (at most 12 characters). */
  instanceId: string;
  /** Where the proxy's gate responder listens on 127.0.0.1; slots' health checks are sent to this port. */
  gatePort: number;
}

/**
 * The traffic gate in the kernel's packet filter, through `iptables-restore` (argv and stdin, never a
 * shell): per installation, one filter chain refusing new connections to closed slots and one nat chain
 * redirecting open slots' health checks to the proxy's gate responder and the proxy's connections to
 * each open slot's service port. Each sync replaces both chains in one transaction, so no packet ever
 * sees half a change; connections already made keep their translation (conntrack) until they close.
 */
export class IptablesTrafficGate implements TrafficGate {
  private readonly filterChain: string;
  private readonly natChain: string;
  private legacyJumpGone = false;

  constructor(private readonly options: IptablesGateOptions) {
    const id = this.idOf(options.instanceId);
    this.filterChain = `${FILTER_PREFIX}${id}`;
    this.natChain = `${NAT_PREFIX}${id}`;
  }

  idOf(instanceId: string): string {
    return instanceId
      .replace(/[^a-zA-Z0-9]/g, '')
      .slice(0, 12)
      .toUpperCase();
  }

  async sync(subnet: string, open: OpenSlot[], signal?: AbortSignal): Promise<void> {
    const port = String(this.options.gatePort);
    if (this.options.gatePort === SLOT_DIAL_PORT) throw new Error(`the gate port cannot be ${SLOT_DIAL_PORT}: the proxy dials slots there`);
    for (const slot of open) {
      if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(slot.ip)) throw new Error(`not an IPv4 address: ${slot.ip}`);
      if (!Number.isInteger(slot.port) || slot.port < 1 || slot.port > 65535) throw new Error(`not a port: ${slot.port}`);
    }
    if (!/^\d{1,3}(\.\d{1,3}){3}\/\d{1,2}$/.test(subnet)) throw new Error(`not an IPv4 subnet: ${subnet}`);
    const lines = [
      '*filter',
      `:${this.filterChain} - [0:0]`,
      ...open.map(({ ip }) => `-A ${this.filterChain} -d ${ip}/32 -j RETURN`),
      `-A ${this.filterChain} -p tcp --syn -j REJECT --reject-with tcp-reset`,
      'COMMIT',
      '*nat',
      `:${this.natChain} - [0:0]`,
      ...open.flatMap(({ ip, port: servicePort }) => [
        `-A ${this.natChain} -d ${ip}/32 -p tcp --dport ${port} -j REDIRECT --to-ports ${port}`,
        `-A ${this.natChain} -d ${ip}/32 -p tcp --dport ${SLOT_DIAL_PORT} -j DNAT --to-destination ${ip}:${servicePort}`,
      ]),
      'COMMIT',
      '',
    ];
    // With --noflush, declaring a chain empties it: the rest of the tables stays as it is.
    await run('iptables-restore', ['--noflush', '--wait'], lines.join('\n'), signal);
    await this.ensureJump('filter', ['OUTPUT', '-d', subnet, '-j', this.filterChain], signal);
    await this.ensureJump('nat', ['OUTPUT', '-d', subnet, '-p', 'tcp', '-j', this.natChain], signal);
    if (this.legacyJumpGone) return;
    // An installation from before the dial port jumped for health checks only: that jump is redundant now.
    await run(
      'iptables',
      ['--wait', '-t', 'nat', '-D', 'OUTPUT', '-d', subnet, '-p', 'tcp', '--dport', port, '-j', this.natChain],
      '',
      signal,
    ).catch(() => '');
    this.legacyJumpGone = true;
  }

  async remove(signal?: AbortSignal): Promise<void> {
    await this.removeInstall(this.idOf(this.options.instanceId), signal);
  }

  /** The installs whose chains the filter and nat tables hold, with the subnets their jumps from OUTPUT name. */
  async installs(signal?: AbortSignal): Promise<GateInstall[]> {
    const found = new Map<string, Set<string>>();
    for (const table of ['filter', 'nat']) {
      for (const rule of (await run('iptables', ['--wait', '-t', table, '-S'], '', signal)).split('\n')) {
        const words = rule.trim().split(/\s+/);
        if (words[0] === '-N') {
          const id = CHAIN.exec(words[1] ?? '')?.[2];
          if (id && !found.has(id)) found.set(id, new Set());
        } else if (words[0] === '-A' && words[1] === 'OUTPUT') {
          const id = CHAIN.exec(words[words.indexOf('-j') + 1] ?? '')?.[2];
          const subnet = words[words.indexOf('-d') + 1];
          if (!id || !words.includes('-d') || !subnet) continue;
          const subnets = found.get(id) ?? new Set<string>();
          // iptables prints a /32 destination without its length.
          subnets.add(subnet.includes('/') ? subnet : `${subnet}/32`);
          found.set(id, subnets);
        }
      }
    }
    return [...found].map(([id, subnets]) => ({ id, subnets: [...subnets].sort() }));
  }

  async removeInstall(id: string, signal?: AbortSignal): Promise<void> {
    if (!/^[A-Z0-9]{1,12}$/.test(id)) throw new Error(`not a gate id: ${id}`);
    for (const [table, chain] of [
      ['filter', `${FILTER_PREFIX}${id}`],
      ['nat', `${NAT_PREFIX}${id}`],
    ] as const) {
      const rules = await run('iptables', ['--wait', '-t', table, '-S', 'OUTPUT'], '', signal).catch(() => '');
      for (const rule of rules.split('\n')) {
        if (!rule.startsWith('-A OUTPUT ') || !rule.endsWith(`-j ${chain}`)) continue;
        await run('iptables', ['--wait', '-t', table, '-D', ...rule.slice(3).split(' ')], '', signal).catch(() => '');
      }
      await run('iptables', ['--wait', '-t', table, '-F', chain], '', signal).catch(() => '');
      await run('iptables', ['--wait', '-t', table, '-X', chain], '', signal).catch(() => '');
    }
  }

  /** Binds the responder's address for a moment, as its httpd will. */
  portFree(): Promise<boolean> {
    return new Promise((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen({ port: this.options.gatePort, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)));
    });
  }

  /** Adds the jump from OUTPUT once; `-C` tells whether it is there. */
  private async ensureJump(table: string, rule: string[], signal?: AbortSignal): Promise<void> {
    const present = await run('iptables', ['--wait', '-t', table, '-C', ...rule], '', signal).then(
      () => true,
      () => false,
    );
    if (!present) await run('iptables', ['--wait', '-t', table, '-I', ...rule], '', signal);
  }
}

/** Runs a command with argv, feeds it `input`, and resolves with its stdout; rejects with its stderr. */
function run(command: string, args: string[], input: string, signal?: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const limit = AbortSignal.timeout(CALL_TIMEOUT_MS);
    const child = spawn(command, args, {
      stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      signal: signal ? AbortSignal.any([signal, limit]) : limit,
    });
    let out = '';
    let err = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.once('error', (error) => reject(new Error(`${command}: ${error.message}`)));
    child.once('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(' ')} exited with ${code}: ${err.trim()}`)),
    );
    if (child.stdin) {
      // A command that exits without reading its input must not take the platform down with an EPIPE.
      child.stdin.once('error', () => {});
      child.stdin.end(input);
    }
  });
}
