import { mkdir } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { ProxyResult, ProxyState, ReverseProxy, RoutingTable } from '../../src/routing/reverse-proxy.port.js';
import {
  buildCaddyConfig,
  planFiles,
  servingMarker,
  tableMarker,
  type CaddyServeOptions,
  type OnDemandForm,
  type RouteFiles,
} from './caddy-config.js';
import { RoutesDirectory, type RoutesStamp } from './routes-directory.js';

const CALL_TIMEOUT_MS = 10_000;

/** The Caddy the platform runs itself: started (again) when its admin API does not answer. */
export interface ProxyHost {
  ensure(signal: AbortSignal): Promise<void>;
}

export interface CaddyAdminOptions extends CaddyServeOptions {
  /** e.g. `http://127.0.0.1:2019`: Caddy's admin API, which only ever listens on loopback here. */
  adminUrl: string;
  host?: ProxyHost | undefined;
  /** The routes directory the platform writes (one empty file per hostname, see RoutesDirectory). */
  routesDir: string;
  /** The same directory as Caddy reads it: its mount point in Caddy's container; `routesDir` when unset. */
  caddyRoutesDir?: string | undefined;
  /** Where Caddy writes its access log (`access.log` in it), for the metrics' request counts; none when unset. */
  accessLogDir?: string | undefined;
  /** The same directory as Caddy sees it; `accessLogDir` when unset. */
  caddyAccessLogDir?: string | undefined;
}

/**
 * Keeps a Caddy configured through its admin API and the routes directory. The table is files only:
 * which hostnames are routed, and where each goes (see RouteFiles), so a table that differs from the
 * served one changes files and Caddy is not reloaded (a load closes its idle client connections,
 * whatever hostname they are for). A load replaces the whole configuration, which Caddy applies
 * atomically (a rejected one leaves the previous one serving): when Caddy does not serve this
 * platform's configuration (it started empty, or lost it) or how the table is served changed.
 */
export class CaddyReverseProxy implements ReverseProxy {
  readonly enabled = true;
  private readonly adminUrl: string;
  private readonly directory: RoutesDirectory;
  private readonly caddyRoutesDir: string;
  /** Learnt from the first Caddy that refuses `permission` (see OnDemandForm). */
  private onDemand: OnDemandForm = 'permission';
  private applying: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: CaddyAdminOptions) {
    this.adminUrl = options.adminUrl.replace(/\/+$/, '');
    this.directory = new RoutesDirectory(options.routesDir);
    this.caddyRoutesDir = options.caddyRoutesDir ?? options.routesDir;
  }

  /** One at a time: two applies interleaving their file changes could leave a mix of both tables. */
  apply(table: RoutingTable, signal?: AbortSignal): Promise<ProxyResult> {
    const run = this.applying.then(() => this.applyNow(table, signal));
    this.applying = run.catch(() => {});
    return run;
  }

  private async applyNow(table: RoutingTable, signal?: AbortSignal): Promise<ProxyResult> {
    let files: RouteFiles[];
    try {
      files = planFiles(table);
    } catch (error) {
      return { ok: false, detail: messageOf(error) };
    }
    const accessLogDir = this.options.caddyAccessLogDir ?? this.options.accessLogDir;
    const layout = () => ({
      routesDir: this.caddyRoutesDir,
      onDemand: this.onDemand,
      ...(accessLogDir ? { accessLog: `${accessLogDir.replace(/\/+$/, '')}/access.log` } : {}),
    });
    const { digest } = buildCaddyConfig(this.options, null, layout());
    let synced = false;
    let previous: RoutesStamp | null;
    try {
      previous = await this.directory.stamp();
      // The generation of this configuration exists, so Caddy most likely serves it: the files are the
      // whole change, made before any call to Caddy (traffic follows them even if its admin API is slow
      // or down for a moment). From here until the new stamp, check() says stale.
      if (await this.directory.has(digest)) {
        await this.directory.clearStamp();
        await this.directory.sync(digest, files);
        synced = true;
      }
    } catch (error) {
      return { ok: false, detail: messageOf(error) };
    }
    try {
      if (this.options.host) await this.options.host.ensure(withTimeout(signal, 120_000));
    } catch (error) {
      return { ok: false, detail: `the Caddy container could not be started: ${messageOf(error)}` };
    }
    try {
      const admin = await this.call('GET', '/config/admin', signal);
      if (admin.status !== 200)
        return { ok: false, detail: `Caddy's admin API at ${this.adminUrl} answered ${admin.status} to GET /config/admin` };
      await this.directory.ensureRoot();
      if (this.options.accessLogDir) await mkdir(this.options.accessLogDir, { recursive: true, mode: 0o755 });
      const served = await this.serves(digest, signal);
      if (!synced) {
        await this.directory.clearStamp();
        await this.directory.sync(digest, files);
      }
      if (served) {
        await this.directory.prune(digest);
        await this.directory.writeStamp({ version: table.version, digest });
        return { ok: true, detail: this.describe(table, false) };
      }

      let built = buildCaddyConfig(this.options, admin.body, layout());
      let loaded = await this.call('POST', '/load', signal, built.config);
      if (loaded.status !== 200 && this.onDemand === 'permission' && /unknown field \\?"permission\\?"/.test(reasonOf(loaded))) {
        // Caddy 2.6/2.7: the same configuration with the `ask` URL (same digest, same directory).
        this.onDemand = 'ask';
        built = buildCaddyConfig(this.options, admin.body, layout());
        loaded = await this.afterRejection(() => this.call('POST', '/load', signal, built.config));
      }
      if (loaded.status === 200) {
        await this.directory.prune(digest);
        await this.directory.writeStamp({ version: table.version, digest });
        return { ok: true, detail: this.describe(table, true) };
      }
      // Caddy still serves the previous configuration, which reads the previous generation, untouched. The
      // refused one's generation stays for the next attempt (the reconcile loop's), and goes with a success.
      if (previous) await this.directory.writeStamp(previous);
      return { ok: false, detail: `Caddy rejected the configuration, and keeps serving the previous one: ${reasonOf(loaded)}` };
    } catch (error) {
      return { ok: false, detail: messageOf(error) };
    }
  }

  async check(version: string, signal?: AbortSignal): Promise<ProxyState> {
    const stamp = await this.directory.stamp();
    try {
      // Asked even without a stamp: an unreachable Caddy is reported (and its container started again) as such.
      const answer = await this.call('GET', `/id/${tableMarker(stamp?.digest ?? 'none')}`, signal);
      if (!stamp || stamp.version !== version || answer.status !== 200) return { state: 'stale' };
      const serving = await this.call('GET', `/id/${servingMarker(this.options)}`, signal);
      return serving.status === 200 ? { state: 'current' } : { state: 'stale' };
    } catch (error) {
      if (this.options.host) await this.options.host.ensure(withTimeout(signal, 120_000)).catch(() => {});
      return { state: 'unreachable', detail: messageOf(error) };
    }
  }

  /** Whether Caddy serves the configuration named `digest`, the way this platform serves it. */
  private async serves(digest: string, signal?: AbortSignal): Promise<boolean> {
    if ((await this.call('GET', `/id/${tableMarker(digest)}`, signal)).status !== 200) return false;
    return (await this.call('GET', `/id/${servingMarker(this.options)}`, signal)).status === 200;
  }

  /** Caddy restarts its admin endpoint while it rolls a refused load back: the next call may find it closed for a moment. */
  private async afterRejection<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        if (attempt >= 10) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }

  private describe(table: RoutingTable, loaded: boolean): string {
    const n = table.routes.length;
    const serving = this.options.autoHttps
      ? `HTTPS on :${this.options.httpsPort} with on-demand certificates, HTTP on :${this.options.httpPort} redirecting`
      : `plain HTTP on :${this.options.httpPort}`;
    const routes = `${n} route${n === 1 ? '' : 's'} (${serving})`;
    return loaded ? `Caddy loaded ${routes}` : `Caddy serves ${routes}; hostnames updated without a reload`;
  }

  private async call(
    method: 'GET' | 'POST',
    path: string,
    signal: AbortSignal | undefined,
    body?: unknown,
  ): Promise<{ status: number; body: unknown }> {
    let answer: { status: number; text: string };
    try {
      answer = await adminRequest(
        `${this.adminUrl}${path}`,
        method,
        body === undefined ? null : JSON.stringify(body),
        withTimeout(signal, CALL_TIMEOUT_MS),
      );
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

function reasonOf(answer: { status: number; body: unknown }): string {
  return typeof answer.body === 'object' && answer.body && 'error' in answer.body ? String(answer.body.error) : `HTTP ${answer.status}`;
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
      {
        method,
        agent: false,
        signal,
        headers: body === null ? {} : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
      },
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
  if (error.name === 'TimeoutError' || (error.name === 'AbortError' && (error.cause as Error | undefined)?.name === 'TimeoutError'))
    return 'timed out';
  return error.message;
}
