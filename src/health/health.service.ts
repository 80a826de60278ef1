import type { ContainerEngine } from '../deployments/container-engine.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { ReverseProxy } from '../routing/reverse-proxy.port.js';
import type { RoutingService } from '../routing/routing.service.js';
import type { HealthView } from './health-views.js';

/** How long an answer is reused: a health endpoint polled by a load balancer must not hammer Docker. */
const CACHE_MS = 3_000;
/** Each check gives up after this; the three run at once, so an answer takes at most this long. */
const CHECK_TIMEOUT_MS = 2_000;

type Component = HealthView['engine'];

/**
 * `GET /api/health`: whether the engine, the proxy and the database answer. A down dependency makes
 * the status `degraded`; the call itself still answers 200, since the API does.
 */
export class HealthService {
  private cached: { at: number; view: HealthView } | null = null;
  private inFlight: Promise<HealthView> | null = null;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly engine: ContainerEngine | null,
    private readonly proxy: ReverseProxy,
    private readonly routing: RoutingService,
    /** The notification channels' state: a channel whose last attempts all failed makes the install degraded. */
    private readonly notifications?: { health(): Promise<{ channels: number; failing: unknown[] }> },
  ) {}

  async check(): Promise<HealthView> {
    if (this.cached && Date.now() - this.cached.at < CACHE_MS) return this.cached.view;
    // Concurrent callers share one round of checks.
    this.inFlight ??= this.run().finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  private async run(): Promise<HealthView> {
    const [engine, proxy, database, notifications] = await Promise.all([
      this.checkEngine(),
      this.checkProxy(),
      this.checkDatabase(),
      this.checkNotifications(),
    ]);
    const degraded = [engine, proxy, database, notifications].some((c) => c.status === 'down');
    const view: HealthView = {
      ok: true,
      status: degraded ? 'degraded' : 'ok',
      engine,
      proxy,
      database,
      notifications,
      checkedAt: this.deps.clock.now().toISOString(),
    };
    this.cached = { at: Date.now(), view };
    return view;
  }

  /** Counts only: the answer is public, and a channel's name or error is the administrators' (GET /api/notifications/channels). */
  private async checkNotifications(): Promise<Component> {
    if (!this.notifications) return { status: 'disabled', detail: 'no notifications wired to this process' };
    try {
      const { channels, failing } = await this.notifications.health();
      if (channels === 0) return { status: 'disabled', detail: 'no notification channels' };
      if (failing.length > 0)
        return { status: 'down', detail: `${failing.length} of ${channels} channels failing: their last 5 deliveries failed` };
      return { status: 'up', detail: `${channels} channels delivering` };
    } catch (error) {
      return { status: 'down', detail: error instanceof Error ? error.message : String(error) };
    }
  }

  private async checkEngine(): Promise<Component> {
    if (!this.engine) return { status: 'disabled', detail: 'no container engine is wired to this process' };
    const engine = this.engine;
    return probe(async (signal) => {
      await engine.ping(signal);
      return 'the Docker engine answers';
    });
  }

  private async checkProxy(): Promise<Component> {
    if (!this.proxy.enabled) return { status: 'disabled', detail: 'no reverse proxy configured (PROXY=none)' };
    const table = await this.routing.table().catch(() => null);
    return probe(async (signal) => {
      const state = await this.proxy.check(table?.version ?? 'none', signal);
      if (state.state === 'unreachable') throw new Error(state.detail);
      return state.state === 'current' || !table
        ? 'the proxy serves the current routes'
        : 'the proxy answers; the current routes are being loaded';
    });
  }

  private checkDatabase(): Promise<Component> {
    return probe(async () => {
      await this.deps.store.ping();
      return 'the database answers';
    });
  }
}

async function probe(run: (signal: AbortSignal) => Promise<string>): Promise<Component> {
  const signal = AbortSignal.timeout(CHECK_TIMEOUT_MS);
  let timer: NodeJS.Timeout | undefined;
  // The timeout wins even over a check that ignores its signal.
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
  });
  try {
    return { status: 'up', detail: await Promise.race([run(signal), timedOut]) };
  } catch (error) {
    return { status: 'down', detail: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}
