import type { PortProbe } from '../../src/projects/port-probe.port.js';
import type { ProxyResult, ProxyState, ReverseProxy, RouteTarget, RoutingTable } from '../../src/routing/reverse-proxy.port.js';
import type { RuntimeLogEvent, RuntimeLogSource } from '../../src/deployments/runtime-logs.port.js';

/**
 * Records every routing table it is given; serves the last one it accepted, like Caddy, until
 * `restartEmpty()` or `down`.
 */
export class RecordingReverseProxy implements ReverseProxy {
  enabled = true;
  readonly applied: RouteTarget[][] = [];
  readonly versions: string[] = [];
  result: ProxyResult = { ok: true, detail: 'loaded' };
  /** Unreachable with this reason: apply fails and check says so. */
  down: string | null = null;
  serving: string | null = null;
  checks = 0;

  async apply(table: RoutingTable): Promise<ProxyResult> {
    if (this.down) return { ok: false, detail: this.down };
    this.applied.push(table.routes);
    this.versions.push(table.version);
    if (this.result.ok) this.serving = table.version;
    return this.result;
  }

  async check(version: string): Promise<ProxyState> {
    this.checks++;
    if (this.down) return { state: 'unreachable', detail: this.down };
    return this.serving === version ? { state: 'current' } : { state: 'stale' };
  }

  restartEmpty(): void {
    this.serving = null;
  }

  get last(): RouteTarget[] | undefined {
    return this.applied.at(-1);
  }
}

/** Every port free except the ones listed as held by something else on the host. */
export class FakePortProbe implements PortProbe {
  readonly held = new Set<number>();
  async isFree(port: number): Promise<boolean> {
    return !this.held.has(port);
  }
}

/** Replays scripted runtime log events per service; a service without a script has no container. */
export class ScriptedRuntimeLogs implements RuntimeLogSource {
  readonly scripts = new Map<string, RuntimeLogEvent[]>();
  readonly opened: string[] = [];

  async *follow(serviceId: string, opts: { signal: AbortSignal }): AsyncGenerator<RuntimeLogEvent> {
    this.opened.push(serviceId);
    const script = this.scripts.get(serviceId);
    if (!script) {
      yield { type: 'closed', ok: false, reason: 'the service has no running container' };
      return;
    }
    for (const event of script) {
      if (opts.signal.aborted) return;
      yield event;
    }
  }
}
