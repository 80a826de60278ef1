import type { PortProbe } from '../../src/ports/port-probe.port.js';
import type { ProxyResult, ReverseProxy, RouteTarget } from '../../src/ports/reverse-proxy.port.js';
import type { RuntimeLogEvent, RuntimeLogSource } from '../../src/ports/runtime-logs.port.js';

/** Records every routing table it is given. */
export class RecordingReverseProxy implements ReverseProxy {
  readonly applied: RouteTarget[][] = [];
  result: ProxyResult = { ok: true, detail: 'loaded' };

  async apply(routes: RouteTarget[]): Promise<ProxyResult> {
    this.applied.push(routes);
    return this.result;
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
