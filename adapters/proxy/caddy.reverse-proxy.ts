import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { ProxyResult, ProxyState, ReverseProxy, RoutingTable } from '../../src/routing/reverse-proxy.port.js';
import { buildCaddyConfig, servingMarker, tableMarker, type CaddyServeOptions } from './caddy-config.js';

const CALL_TIMEOUT_MS = 10_000;

/** The Caddy the platform runs itself: started (again) when its admin API does not answer. */
export interface ProxyHost {
  ensure(signal: AbortSignal): Promise<void>;
}

export interface CaddyAdminOptions extends CaddyServeOptions {
  /** e.g. `http://127.0.0.1:2019`: Caddy's admin API, which only ever listens on loopback here. */
  adminUrl: string;
  host?: ProxyHost | undefined;
}

/**
 * Keeps a Caddy configured through its admin API: every load replaces the whole configuration,
 * which Caddy applies atomically (a rejected one leaves the previous one serving).
 */
export class CaddyReverseProxy implements ReverseProxy {
  readonly enabled = true;
  private readonly adminUrl: string;

  constructor(private readonly options: CaddyAdminOptions) {
    this.adminUrl = options.adminUrl.replace(/\/+$/, '');
  }

  async apply(table: RoutingTable, signal?: AbortSignal): Promise<ProxyResult> {
    try {
      if (this.options.host) await this.options.host.ensure(withTimeout(signal, 120_000));
    } catch (error) {
      return { ok: false, detail: `the Caddy container could not be started: ${messageOf(error)}` };
    }
    try {
      const admin = await this.call('GET', '/config/admin', signal);
      if (admin.status !== 200) return { ok: false, detail: `Caddy's admin API at ${this.adminUrl} answered ${admin.status} to GET /config/admin` };
      const config = buildCaddyConfig(table, this.options, admin.body);
      const loaded = await this.call('POST', '/load', signal, config);
      if (loaded.status === 200) return { ok: true, detail: this.describe(table) };
      const reason = typeof loaded.body === 'object' && loaded.body && 'error' in loaded.body ? String(loaded.body.error) : `HTTP ${loaded.status}`;
      return { ok: false, detail: `Caddy rejected the configuration, and keeps serving the previous one: ${reason}` };
    } catch (error) {
      return { ok: false, detail: messageOf(error) };
    }
  }

  async check(version: string, signal?: AbortSignal): Promise<ProxyState> {
    try {
      const answer = await this.call('GET', `/id/${tableMarker(version)}`, signal);
      if (answer.status !== 200) return { state: 'stale' };
      const serving = await this.call('GET', `/id/${servingMarker(this.options)}`, signal);
      return serving.status === 200 ? { state: 'current' } : { state: 'stale' };
    } catch (error) {
      if (this.options.host) await this.options.host.ensure(withTimeout(signal, 120_000)).catch(() => {});
      return { state: 'unreachable', detail: messageOf(error) };
    }
  }

  private describe(table: RoutingTable): string {
    const n = table.routes.length;
    const serving = this.options.autoHttps
      ? `HTTPS on :${this.options.httpsPort} with automatic certificates, HTTP on :${this.options.httpPort} redirecting`
      : `plain HTTP on :${this.options.httpPort}`;
    return `Caddy loaded ${n} route${n === 1 ? '' : 's'} (${serving})`;
  }

  private async call(method: 'GET' | 'POST', path: string, signal: AbortSignal | undefined, body?: unknown): Promise<{ status: number; body: unknown }> {
    let answer: { status: number; text: string };
    try {
      answer = await adminRequest(`${this.adminUrl}${path}`, method, body === undefined ? null : JSON.stringify(body), withTimeout(signal, CALL_TIMEOUT_MS));
    } catch (error) {
      throw new Error(`Caddy's admin API at ${this.adminUrl} is unreachable: ${messageOf(error)}`);
    }
    let parsed: unknown = answer.text;
    try {
      parsed = answer.text ? JSON.parse(answer.text) : null;
    } catch {
      // Not JSON: keep the text, it is still the best description of what went wrong.
    }
    return { status: answer.status, body: parsed };
  }
}

/**
 * One request on its own connection: Caddy restarts its admin endpoint when it rolls back a
 * rejected load, and a pooled keep-alive socket would then fail the next call as "unreachable".
 */
function adminRequest(url: string, method: string, body: string | null, signal: AbortSignal): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      target,
      { method, agent: false, signal, headers: body === null ? {} : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

function withTimeout(signal: AbortSignal | undefined, ms: number): AbortSignal {
  return signal ? AbortSignal.any([signal, AbortSignal.timeout(ms)]) : AbortSignal.timeout(ms);
}

function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.name === 'TimeoutError' || (error.name === 'AbortError' && (error.cause as Error | undefined)?.name === 'TimeoutError')) return 'timed out';
  return error.message;
}
