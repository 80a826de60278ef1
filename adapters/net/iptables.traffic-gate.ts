import { spawn } from 'node:child_process';
import type { TrafficGate } from '../../src/routing/traffic-gate.port.js';

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
 * redirecting open slots' health checks to the proxy's gate responder. Each sync replaces both chains
 * in one transaction, so no packet ever sees half a change.
 */
export class IptablesTrafficGate implements TrafficGate {
  private readonly filterChain: string;
  private readonly natChain: string;

  constructor(private readonly options: IptablesGateOptions) {
    const id = options.instanceId
      .replace(/[^a-zA-Z0-9]/g, '')
      .slice(0, 12)
      .toUpperCase();
    this.filterChain = `SLIPWAY-EDGE-${id}`;
    this.natChain = `SLIPWAY-GATE-${id}`;
  }

  async sync(subnet: string, open: string[], signal?: AbortSignal): Promise<void> {
    const port = String(this.options.gatePort);
    const lines = [
      '*filter',
      `:${this.filterChain} - [0:0]`,
      ...open.map((ip) => `-A ${this.filterChain} -d ${ip}/32 -j RETURN`),
      `-A ${this.filterChain} -p tcp --syn -j REJECT --reject-with tcp-reset`,
      'COMMIT',
      '*nat',
      `:${this.natChain} - [0:0]`,
      ...open.map((ip) => `-A ${this.natChain} -d ${ip}/32 -p tcp --dport ${port} -j REDIRECT --to-ports ${port}`),
      'COMMIT',
      '',
    ];
    for (const ip of open) if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(ip)) throw new Error(`not an IPv4 address: ${ip}`);
    if (!/^\d{1,3}(\.\d{1,3}){3}\/\d{1,2}$/.test(subnet)) throw new Error(`not an IPv4 subnet: ${subnet}`);
    // With --noflush, declaring a chain empties it: the rest of the tables stays as it is.
    await run('iptables-restore', ['--noflush', '--wait'], lines.join('\n'), signal);
    await this.ensureJump('filter', ['OUTPUT', '-d', subnet, '-j', this.filterChain], signal);
    await this.ensureJump('nat', ['OUTPUT', '-d', subnet, '-p', 'tcp', '--dport', port, '-j', this.natChain], signal);
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
