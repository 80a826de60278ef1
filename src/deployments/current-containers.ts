import { databaseEngineOf } from '../domain/database-engines.js';
import type { ServiceRecord } from '../domain/types.js';
import type { ServiceDeps } from '../platform/deps.js';
import { LABELS, type ContainerEngine, type ContainerState } from './container-engine.port.js';

/** Web services and databases answer on their host port; workers do not. */
export function serves(service: ServiceRecord): boolean {
  return service.runtimeMode === 'web' || databaseEngineOf(service) !== null;
}

/** A database made public listens on every interface; everything else on the loopback address only. */
export function exposureOf(service: ServiceRecord): 'local' | 'public' {
  return service.source.kind === 'database' && service.source.publicEnabled ? 'public' : 'local';
}

/** What the proxy routes to: web services that are not databases. */
export function isWeb(service: ServiceRecord): boolean {
  return service.runtimeMode === 'web' && databaseEngineOf(service) === null;
}

/**
 * Which container is a service's current one: the running container of its latest successful
 * deployment; never one that was not checked. Docker says what runs, the table what succeeded.
 */
export class CurrentContainers {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly engine: ContainerEngine,
  ) {}

  /** Every container of this installation (never another install's on the same engine). */
  ofInstance(): Promise<ContainerState[]> {
    return this.engine.listContainers({ key: LABELS.instance, value: this.deps.config.instanceId });
  }

  ofService(serviceId: string): Promise<ContainerState[]> {
    return this.engine.listContainers({ key: LABELS.service, value: serviceId });
  }

  async currentOf(service: ServiceRecord): Promise<ContainerState | null> {
    return (await this.pick(await this.ofService(service.id))).get(service.id) ?? null;
  }

  /** Whether the service's current container was started with the platform's TLS certificate; null when none runs. */
  async tlsActive(service: ServiceRecord): Promise<boolean | null> {
    const container = await this.currentOf(service);
    return container ? container.labels[LABELS.tls] === 'on' : null;
  }

  /**
   * A container of one of this install's services, by id or name, with the project it belongs to;
   * null for anything else (another install's, the proxy's, a stranger's).
   */
  async serviceContainer(ref: string): Promise<{ container: ContainerState; projectId: string } | null> {
    const container = await this.engine.inspect(ref);
    const projectId = container?.labels[LABELS.project];
    if (!container || !projectId || container.labels[LABELS.instance] !== this.deps.config.instanceId) return null;
    return { container, projectId };
  }

  /**
   * The current container of every service among `containers`, in one look-up of their deployments:
   * the reconcile loop runs every 10 s, and must not cost a Docker call and a query per service.
   */
  async pick(containers: ContainerState[]): Promise<Map<string, ContainerState>> {
    const running = containers.filter((c) => c.running && c.labels[LABELS.deployment]);
    const deployments = await this.deps.store.deployments.listByIds([...new Set(running.map((c) => c.labels[LABELS.deployment]!))]);
    const succeeded = new Map(deployments.filter((d) => d.status === 'succeeded').map((d) => [d.id, d.createdAt.getTime()]));
    const current = new Map<string, { container: ContainerState; at: number }>();
    for (const container of running) {
      const at = succeeded.get(container.labels[LABELS.deployment]!);
      const serviceId = container.labels[LABELS.service];
      if (at === undefined || !serviceId) continue;
      const best = current.get(serviceId);
      if (!best || at > best.at) current.set(serviceId, { container, at });
    }
    return new Map([...current].map(([serviceId, { container }]) => [serviceId, container]));
  }
}
