import { mkdir } from 'node:fs/promises';
import type { ContainerEngine } from '../../src/deployments/container-engine.port.js';
import { LABELS } from '../../src/deployments/container-engine.port.js';
import type { ProxyHost } from './caddy.reverse-proxy.js';

const BOOTSTRAP_PATH = '/etc/caddy/slipway-bootstrap.json';
const ADMIN_WAIT_MS = 15_000;
/** Where Caddy's container reads the routes directory (bind-mounted read-only): its configuration names this path. */
export const CONTAINER_ROUTES_DIR = '/slipway/routes';
/** The host directory mounted there: a container made before, or for another directory, is replaced. */
const ROUTES_LABEL = 'slipway.proxy-routes';
/** Where Caddy's container writes its access log (bind-mounted read-write). */
export const CONTAINER_LOGS_DIR = '/slipway/logs';
/** The host directory mounted there (a container without it is replaced, as for the routes). */
const LOGS_LABEL = 'slipway.proxy-logs';

export interface CaddyContainerOptions {
  /** Resource prefix: the container is `<prefix>-caddy`, its volumes `<prefix>-caddy-data` and `-config`. */
  prefix: string;
  image: string;
  /** Caddy's admin API listens on 127.0.0.1 at this port, on the host's network. */
  adminPort: number;
  /** The routes directory on the host (the platform writes it; Caddy reads it at CONTAINER_ROUTES_DIR). */
  routesDir: string;
  /** The access log directory on the host (Caddy writes it at CONTAINER_LOGS_DIR; the platform reads it). */
  accessLogDir: string;
  log: (message: string, extra?: Record<string, unknown>) => void;
}

/**
 * Runs Caddy as the platform's own container on the host's network: it binds the HTTP and HTTPS
 * ports itself and reaches service containers at their bridge addresses, as the host does.
 * Certificates live on a volume, so a new container (a new image) keeps them. The routes directory
 * is the host's, mounted read-only: hostnames change there without a configuration load.
 */
export class CaddyContainer implements ProxyHost {
  private ensuring: Promise<void> | null = null;

  constructor(
    private readonly engine: ContainerEngine,
    private readonly options: CaddyContainerOptions,
  ) {}

  get name(): string {
    return `${this.options.prefix}-caddy`;
  }

  get adminUrl(): string {
    return `http://127.0.0.1:${this.options.adminPort}`;
  }

  /** The routes directory as Caddy reads it inside the container. */
  get routesMount(): string {
    return CONTAINER_ROUTES_DIR;
  }

  /** The access log directory as Caddy writes it inside the container. */
  get logsMount(): string {
    return CONTAINER_LOGS_DIR;
  }

  /** Concurrent callers (a reload and the reconcile loop) share one start. */
  ensure(signal: AbortSignal): Promise<void> {
    this.ensuring ??= this.start(signal).finally(() => {
      this.ensuring = null;
    });
    return this.ensuring;
  }

  private async start(signal: AbortSignal): Promise<void> {
    const { image, log } = this.options;
    const { routesDir, accessLogDir } = this.options;
    // A bind mount needs its source to exist; the root is never removed afterwards.
    await mkdir(routesDir, { recursive: true, mode: 0o755 });
    await mkdir(accessLogDir, { recursive: true, mode: 0o755 });
    const state = await this.engine.inspect(this.name);
    const same = state?.image === image && state.labels[ROUTES_LABEL] === routesDir && state.labels[LOGS_LABEL] === accessLogDir;
    if (state?.running && same) return;
    if (state && same) {
      log('starting the stopped proxy container', { name: this.name });
      await this.engine.startContainer(this.name);
      return this.waitForAdmin(signal);
    }
    if (state) {
      const why = state.image !== image ? 'its image setting changed' : 'it does not mount the routes and access log directories';
      log(`replacing the proxy container: ${why}`, { name: this.name, from: state.image, to: image, routesDir });
      await this.engine.stopAndRemove(this.name, 10);
    }
    if (!(await this.engine.imageExists(image))) {
      log('pulling the proxy image', { image });
      await this.engine.pullImage(image, () => {}, signal);
    }
    log('starting the proxy container', { name: this.name, image });
    await this.engine.runDaemon({
      name: this.name,
      image,
      cmd: ['caddy', 'run', '--config', BOOTSTRAP_PATH],
      env: { XDG_CONFIG_HOME: '/config', XDG_DATA_HOME: '/data' },
      labels: { [LABELS.managed]: 'true', [LABELS.role]: 'proxy', [ROUTES_LABEL]: routesDir, [LOGS_LABEL]: accessLogDir },
      volumes: [
        { name: `${this.options.prefix}-caddy-data`, target: '/data' },
        { name: `${this.options.prefix}-caddy-config`, target: '/config' },
      ],
      binds: [
        { source: routesDir, target: CONTAINER_ROUTES_DIR, readOnly: true },
        { source: accessLogDir, target: CONTAINER_LOGS_DIR, readOnly: false },
      ],
      // Only the admin endpoint at first: the platform loads the routes as soon as it answers.
      files: [{ path: BOOTSTRAP_PATH, content: JSON.stringify({ admin: { listen: `127.0.0.1:${this.options.adminPort}` } }) }],
      signal,
    });
    await this.waitForAdmin(signal);
  }

  private async waitForAdmin(signal: AbortSignal): Promise<void> {
    const deadline = Date.now() + ADMIN_WAIT_MS;
    while (Date.now() < deadline) {
      signal.throwIfAborted();
      const answered = await fetch(`${this.adminUrl}/config/`, { signal: AbortSignal.any([signal, AbortSignal.timeout(1_000)]) })
        .then((r) => r.ok)
        .catch(() => false);
      if (answered) return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error(
      `${this.name} did not answer on its admin API (${this.adminUrl}) within ${ADMIN_WAIT_MS / 1000} s; see \`docker logs ${this.name}\``,
    );
  }
}
