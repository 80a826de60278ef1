import { spawn } from 'node:child_process';
import { SLOT_DIAL_PORT, type OpenSlot, type TrafficGate } from '../../src/deployments/traffic-gate.port.js';

const CALL_TIMEOUT_MS = 10_000;

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
    const id = options.instanceId
      .replace(/[^a-zA-Z0-9]/g, '')
      .slice(0, 12)
      .toUpperCase();
    this.filterChain = `SLIPWAY-EDGE-${id}`;
    this.natChain = `SLIPWAY-GATE-${id}`;
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
    for (const [table, chain] of [
      ['filter', this.filterChain],
      ['nat', this.natChain],
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
