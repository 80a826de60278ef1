import { ConflictError, ValidationError } from '../domain/errors.js';
import { ENGINE_SPECS, engineOf, isEnginePassword, type DatabaseEngine } from '../domain/database-engines.js';
import { newId } from '../domain/ids.js';
import { slugify, uniqueSlug } from '../domain/slug.js';
import type { ProjectRecord, ServiceRecord, StorageSource } from '../domain/types.js';
import { derivesVariable, keepsData, STORAGE_SERVER, STORAGE_VARIABLES, storageOf } from '../domain/storage-server.js';
import type { Store } from '../persistence/store.js';
import { assertEnvKey, cleanName, normalizeHostname, splitGitUrlCredential } from '../domain/validation.js';
import { assertProjectVisible, assertScope, assertWrite, type Actor } from '../domain/access.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { EnvService } from '../env/env.service.js';
import { allocateHostPort } from './host-port-allocator.js';
import { environmentFor, projectFor, serviceFor } from '../platform/lookup.js';
import { generatedHostname, generatedLabel, presentDeployment, presentDomain, presentService } from '../platform/presenters.js';
import { hostnameScopes } from '../platform/hostname-scopes.js';
import { groupBy } from '../platform/group-by.js';
import { defaultEnvironment, hostnameScope, type EnvironmentRecord } from '../domain/environments.js';
import type { ProjectService } from './project.service.js';
import { serviceSources, sourceKindOf, type ServiceSourceInput, type ServiceSourceKind } from './project.inputs.js';
import type { CreateServiceInput, UpdateServiceInput } from './project.inputs.js';
import type { ServiceRemoval } from './service-removal.js';
import type { RoutingService } from '../routing/routing.service.js';
import { generatePassword } from '../platform/secret-box.js';
import { SERVICE_TABLES, VersionedCache } from '../platform/versioned-cache.js';
import type {
  DeploymentView,
  DomainView,
  EnvVarView,
  ProjectView,
  ProxyResultView,
  ServiceView,
  SuggestionView,
} from '../platform/views.js';

export interface ServiceOverview {
  service: ServiceView;
  deployments: DeploymentView[];
  env: EnvVarView[];
  domains: DomainView[];
  publicIp: string;
  /** The deployment serving now (the newest that went live), or null before the first. */
  liveDeploymentId: string | null;
}

const DEFAULT_INTERNAL_PORT = 3000;
const OVERVIEW_DEPLOYMENTS = 50;

type Variant =
  | { kind: 'repository'; repoFullName: string | null; repoUrl: string | null; urlCredential: string | null }
  | { kind: 'image'; image: string }
  | { kind: 'database'; engine: DatabaseEngine }
  | StorageSource;

/** A storage instance's settings, its key pair made by the caller (StorageCatalog): the wire cannot give them. */
export type StorageSettings = Omit<StorageSource, 'kind'>;

export class ServiceCatalog {
  private readonly overviewCache = new VersionedCache<string, { projectId: string; overview: ServiceOverview }>(() =>
    this.deps.store.versionOf(SERVICE_TABLES),
  );

  constructor(
    private readonly deps: ServiceDeps,
    private readonly env: EnvService,
    private readonly projects: ProjectService,
    private readonly routing: RoutingService,
    private readonly removal: ServiceRemoval,
  ) {}

  /** In the project's default environment (see defaultEnvironment): the detailed API's creation. */
  async create(actor: Actor, projectId: string, input: CreateServiceInput, storage?: StorageSettings): Promise<ServiceView> {
    assertWrite(actor);
    const project = await projectFor(this.deps.store, actor, projectId);
    return this.createIn(actor, project, await defaultEnvironmentOf(this.deps.store, project.id), input, storage);
  }

  /** In the environment named: `POST /api/environments/{environmentId}/apps`. */
  async createInEnvironment(actor: Actor, environmentId: string, input: CreateServiceInput): Promise<ServiceView> {
    assertWrite(actor);
    const environment = await environmentFor(this.deps.store, actor, environmentId);
    const project = (await this.deps.store.projects.get(environment.projectId))!;
    return this.createIn(actor, project, environment, input);
  }

  private async createIn(
    actor: Actor,
    project: ProjectRecord,
    environment: EnvironmentRecord,
    input: CreateServiceInput,
    storage?: StorageSettings,
  ): Promise<ServiceView> {
    const name = cleanName(input.name);
    const variant = classify(input, storage);
    // A database or a storage instance is created with project:write and db:manage (docs/accounts.md).
    if (variant.kind === 'database' || variant.kind === 'storage') assertScope(actor, 'db:manage');
    const env = input.env ?? [];
    env.forEach((entry, i) => assertEnvKey(entry.key, `env.${i}.key`));
    const duplicate = env.find((entry, i) => env.findIndex((e) => e.key === entry.key) !== i);
    if (duplicate) throw new ValidationError('env', `Environment variable ${duplicate.key} is given twice`);
    // A storage instance serves S3 over HTTP: a web service, whatever was asked.
    const runtimeMode = variant.kind === 'storage' ? 'web' : (input.runtimeMode ?? 'web');
    const engine = variant.kind === 'database' ? variant.engine : null;
    const now = this.deps.clock.now();

    const scope = hostnameScope(project.slug, environment);
    const service = await this.deps.store.transaction(async (tx) => {
      const slug = uniqueSlug(slugify(name), await slugsTakenIn(tx, environment, scope));
      const hostPort = await allocateHostPort(tx, this.deps.portProbe, this.deps.config.hostPortRange);
      const record: ServiceRecord = {
        id: newId(),
        projectId: project.id,
        environmentId: environment.id,
        name,
        slug,
        branch: cleanBranch(input.branch ?? 'main'),
        rootDir: relativePath(input.rootDir, 'rootDir'),
        // A credential in the URL is the git token: encrypted, never shown, never in the URL we keep or log.
        gitTokenEncrypted: gitToken(input, variant) ? this.deps.secrets.encrypt(gitToken(input, variant)!) : null,
        installCommand: blankToNull(input.installCommand),
        buildCommand: blankToNull(input.buildCommand),
        startCommand: blankToNull(input.startCommand),
        staticOutput: relativePath(input.staticOutput, 'staticOutput'),
        buildMethod: input.buildMethod ?? 'auto',
        dockerfilePath: relativePath(input.dockerfilePath, 'dockerfilePath'),
        detectedBuildMethod: null,
        runtimeMode,
        internalPort:
          input.internalPort ??
          (engine ? ENGINE_SPECS[engine].internalPort : variant.kind === 'storage' ? STORAGE_SERVER.internalPort : DEFAULT_INTERNAL_PORT),
        hostPort,
        source:
          variant.kind === 'repository'
            ? { kind: 'repository', repoFullName: variant.repoFullName, repoUrl: variant.repoUrl }
            : variant.kind === 'image'
              ? { kind: 'image', image: variant.image }
              : variant.kind === 'storage'
                ? variant
                : {
                    kind: 'database',
                    engine: variant.engine,
                    publicEnabled: input.databasePublicEnabled ?? false,
                    publicHostname: input.databasePublicHostname
                      ? normalizeHostname(input.databasePublicHostname, 'databasePublicHostname')
                      : generatedHostname({ slug }, scope, this.deps.config.rootDomain),
                    logicalReplicationEnabled:
                      variant.engine === 'postgres' || variant.engine === 'timescale'
                        ? (input.postgresLogicalReplicationEnabled ?? false)
                        : false,
                  },
        status: 'idle',
        reachable: false,
        preferredDomain: null,
        framework: null,
        lastDeployedAt: null,
        createdAt: now,
        updatedAt: now,
      };
      await tx.projects.insertService(record);
      // A database password is secret whoever chose it.
      const isPassword = (key: string) => engine !== null && isEnginePassword(engine, key);
      for (const entry of env)
        await this.env.upsert(tx, record.id, { ...entry, secret: entry.secret ?? (isPassword(entry.key) || undefined) });
      if (engine) {
        const given = new Set(env.map((e) => e.key));
        for (const initial of ENGINE_SPECS[engine].initialEnv) {
          if (given.has(initial.key)) continue;
          const value = initial.generate(slug, generatePassword);
          await this.env.upsert(tx, record.id, { key: initial.key, value, secret: isPassword(initial.key) });
        }
      }
      await tx.projects.update(project.id, { updatedAt: now });
      return record;
    });
    return presentService(service, { hostnameScope: scope, domains: [] }, this.deps.config);
  }

  async overview(actor: Actor, serviceId: string): Promise<ServiceOverview> {
    const cached = this.overviewCache.get(serviceId);
    if (cached) {
      assertProjectVisible(actor, cached.projectId, 'Service', serviceId);
      return cached.overview;
    }
    const version = this.deps.store.versionOf(SERVICE_TABLES);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const [scope, domains, deployments, env, live] = await Promise.all([
      hostnameScopeOf(this.deps.store, service),
      this.deps.store.domains.list([service.id]),
      this.deps.store.deployments.list(service.id, OVERVIEW_DEPLOYMENTS),
      this.env.listForService(service),
      this.deps.store.deployments.listLive(service.id, 1),
    ]);
    const overview = {
      service: presentService(service, { hostnameScope: scope, domains }, this.deps.config),
      deployments: deployments.map(presentDeployment),
      env,
      domains: domains.map(presentDomain),
      publicIp: this.deps.config.publicIp,
      liveDeploymentId: live[0]?.id ?? null,
    };
    this.overviewCache.set(service.id, { projectId: service.projectId, overview }, version);
    return overview;
  }

  async update(actor: Actor, serviceId: string, input: UpdateServiceInput): Promise<ServiceView> {
    assertWrite(actor);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const patch: Partial<ServiceRecord> = { updatedAt: this.deps.clock.now() };
    if (input.branch !== undefined) patch.branch = cleanBranch(input.branch);
    if (input.rootDir !== undefined) patch.rootDir = relativePath(input.rootDir, 'rootDir');
    if (input.installCommand !== undefined) patch.installCommand = blankToNull(input.installCommand);
    if (input.buildCommand !== undefined) patch.buildCommand = blankToNull(input.buildCommand);
    if (input.startCommand !== undefined) patch.startCommand = blankToNull(input.startCommand);
    if (input.staticOutput !== undefined) patch.staticOutput = relativePath(input.staticOutput, 'staticOutput');
    if (input.buildMethod !== undefined) patch.buildMethod = input.buildMethod;
    if (input.dockerfilePath !== undefined) patch.dockerfilePath = relativePath(input.dockerfilePath, 'dockerfilePath');
    if (input.internalPort !== undefined) patch.internalPort = input.internalPort;
    if (input.gitToken !== undefined) patch.gitTokenEncrypted = input.gitToken ? this.deps.secrets.encrypt(input.gitToken) : null;
    if (input.runtimeMode !== undefined && input.runtimeMode !== service.runtimeMode) {
      if (service.source.kind === 'storage')
        throw new ValidationError('runtimeMode', 'A storage instance serves S3 over HTTP: it stays web');
      if (input.runtimeMode === 'worker' && (await this.deps.store.domains.list([service.id])).length > 0) {
        throw new ConflictError('Workers do not accept domains: remove the domains of this service before making it a worker');
      }
      patch.runtimeMode = input.runtimeMode;
    }
    await this.deps.store.projects.updateService(service.id, patch);
    return this.view(service.id);
  }

  async transfer(
    actor: Actor,
    serviceId: string,
    targetProjectId: string,
  ): Promise<{ service: ServiceView; project: ProjectView; proxy: ProxyResultView }> {
    assertWrite(actor);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const target = await projectFor(this.deps.store, actor, targetProjectId);
    if (target.id !== service.projectId) {
      const now = this.deps.clock.now();
      const environment = await defaultEnvironmentOf(this.deps.store, target.id);
      await this.deps.store.transaction(async (tx) => {
        const slug = uniqueSlug(service.slug, await slugsTakenIn(tx, environment, hostnameScope(target.slug, environment)));
        await tx.projects.updateService(service.id, { projectId: target.id, environmentId: environment.id, slug, updatedAt: now });
        await tx.projects.update(target.id, { updatedAt: now });
        await tx.projects.update(service.projectId, { updatedAt: now });
      });
    }
    const proxy = await this.routing.reload();
    return { service: await this.view(service.id), project: await this.projects.get(actor, target.id), proxy };
  }

  async delete(actor: Actor, serviceId: string): Promise<ProxyResultView> {
    assertWrite(actor);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    if (keepsData(service)) assertScope(actor, 'db:manage');
    return this.removal.removeService(service);
  }

  async suggestionKeys(
    actor: Actor,
    serviceId: string,
  ): Promise<{ suggestions: Array<{ key: string; label: string }>; databaseVariables: SuggestionView[] }> {
    const service = await serviceFor(this.deps.store, actor, serviceId);
    // Only its own environment's services: `${slug.KEY}` resolves there.
    const siblings = await this.deps.store.projects.listServicesIn([service.environmentId]);
    const vars = await this.deps.store.env.list(siblings.map((s) => s.id));
    const byId = new Map(siblings.map((s) => [s.id, s]));
    const suggestions: Array<{ key: string; label: string }> = [
      { key: 'hostPort', label: `Host port of this service (${service.hostPort})` },
      { key: 'PORT', label: `Port the service listens on inside its container (${service.internalPort})` },
    ];
    for (const v of vars) {
      const owner = byId.get(v.serviceId)!;
      // A storage instance's derived variables win over stored ones of their names: listed once, below.
      if (derivesVariable(owner, v.key)) continue;
      suggestions.push({ key: `${owner.slug}.${v.key}`, label: `${v.key} of ${owner.name}: reference it as \${${owner.slug}.${v.key}}` });
    }
    for (const owner of siblings.filter((s) => storageOf(s) !== null)) {
      for (const [key, what] of Object.entries(STORAGE_VARIABLES)) {
        suggestions.push({
          key: `${owner.slug}.${key}`,
          label: `${key}, the ${what} of storage ${owner.name}: reference it as \${${owner.slug}.${key}}`,
        });
      }
    }
    return { suggestions, databaseVariables: await this.projects.databaseSuggestionsFor(siblings) };
  }

  /** One service as the overview shows it. */
  async get(actor: Actor, serviceId: string): Promise<ServiceView> {
    return (await this.overview(actor, serviceId)).service;
  }

  async view(serviceId: string): Promise<ServiceView> {
    const service = (await this.deps.store.projects.getService(serviceId))!;
    const [scope, domains] = await Promise.all([hostnameScopeOf(this.deps.store, service), this.deps.store.domains.list([service.id])]);
    return presentService(service, { hostnameScope: scope, domains }, this.deps.config);
  }

  /** Services as listed, two queries for the domains and hostname scopes whatever their number. */
  async views(services: ServiceRecord[]): Promise<ServiceView[]> {
    if (services.length === 0) return [];
    const [scopes, domains] = await Promise.all([
      hostnameScopes(this.deps.store, [...new Set(services.map((s) => s.projectId))]),
      this.deps.store.domains.list(services.map((s) => s.id)),
    ]);
    const domainsOf = groupBy(domains, (d) => d.serviceId);
    return services.map((s) =>
      presentService(s, { hostnameScope: scopes.get(s.environmentId) ?? '', domains: domainsOf.get(s.id) ?? [] }, this.deps.config),
    );
  }
}

function classify(input: CreateServiceInput, storage: StorageSettings | undefined): Variant {
  if (input.repoUrl === 'storage') {
    // Its generated secret is shown once, in the answer of POST /api/storage: no other door makes one.
    if (!storage)
      throw new ValidationError('repoUrl', 'A storage instance is created with POST /api/storage, whose answer shows its secret once');
    return { kind: 'storage', ...storage };
  }
  const kind = sourceKindOf(input);
  if (!kind) {
    throw new ValidationError(
      'repoFullName',
      'A service needs a repository (repoFullName "<owner>/<repo>", or null with repoUrl), a container image (repoUrl "container-image") or a database (repoUrl "database")',
    );
  }
  if (kind === 'repository' && input.repoFullName?.startsWith('database:')) {
    throw new ValidationError('repoUrl', 'A database service is created with repoUrl "database"');
  }
  if (kind === 'image') return { kind: 'image', image: parseSource(kind, input).containerImage };
  if (kind === 'database') return { kind: 'database', engine: engineOf(parseSource(kind, input).repoFullName)! };
  const source = parseSource(kind, input);
  const { url, credential } = source.repoUrl ? splitGitUrlCredential(source.repoUrl) : { url: null, credential: null };
  if (credential && input.gitToken) throw new ValidationError('repoUrl', 'Give the credential either in repoUrl or as gitToken, not both');
  return { kind: 'repository', repoFullName: source.repoFullName || null, repoUrl: url || null, urlCredential: credential };
}

const SOURCE_NAMES: Record<ServiceSourceKind, string> = {
  repository: 'repository service',
  gitUrl: 'repository service given by its Git URL',
  image: 'container-image service (repoUrl "container-image")',
  database: 'database service (repoUrl "database")',
};

/** The source fields held to the schema of the source their markers name (serviceSources), or a 400 naming the first bad one. */
function parseSource<K extends ServiceSourceKind>(kind: K, input: CreateServiceInput): ServiceSourceInput<K> {
  const fields = { repoFullName: input.repoFullName, repoUrl: input.repoUrl, containerImage: input.containerImage };
  const parsed = serviceSources[kind].safeParse(fields, {
    error: (issue) => (issue.input === undefined || issue.input === null ? `required for a ${SOURCE_NAMES[kind]}` : undefined),
  });
  if (parsed.success) return parsed.data as ServiceSourceInput<K>;
  const issue = parsed.error.issues[0]!;
  const field = String(issue.path[0] ?? 'repoUrl');
  throw new ValidationError(field, `${field}: ${issue.message}`);
}

function gitToken(input: CreateServiceInput, variant: Variant): string | null {
  return input.gitToken || (variant.kind === 'repository' ? variant.urlCredential : null) || null;
}

function blankToNull(value: string | null | undefined): string | null {
  if (value === undefined || value === null) return null;
  const trimmed = value.trim();
  return trimmed === '' ? null : trimmed;
}

/** A path inside the repository: relative, no `..`, normalised without leading `./` or trailing `/`. */
function relativePath(value: string | null | undefined, field: string): string | null {
  const path = blankToNull(value);
  if (path === null) return null;
  const normalized = path.replace(/^\.\/+/, '').replace(/\/+$/, '');
  if (path.startsWith('/') || normalized.split('/').includes('..') || /[\0\n]/.test(path)) {
    throw new ValidationError(field, `${field} must be a path relative to the repository, without ".."`);
  }
  return normalized === '' || normalized === '.' ? null : normalized;
}

/** Git ref names: no spaces, control characters, `..`, or a leading `-` (it would read as an option). */
function cleanBranch(branch: string): string {
  const trimmed = branch.trim();
  if (!trimmed || trimmed.startsWith('-') || trimmed.includes('..') || /[\s~^:?*[\\\0]/.test(trimmed) || trimmed.length > 255) {
    throw new ValidationError('branch', `${JSON.stringify(branch)} is not a valid branch name`);
  }
  return trimmed;
}

/**
 * The environment's own slugs, and the ones that would give a service here the generated hostname
 * label (`<service>-<scope>`) of a service elsewhere: `a-b` in project `c` and `a` in project `b-c`
 * (or in environment `b` of project `c`) would share one.
 */
async function slugsTakenIn(store: Store, environment: EnvironmentRecord, scope: string): Promise<Set<string>> {
  const taken = await store.projects.serviceSlugsIn(environment.id);
  const suffix = `-${scope}`;
  for (const [label, owner] of await generatedLabels(store)) {
    if (owner.environmentId !== environment.id && label.endsWith(suffix) && label.length > suffix.length)
      taken.add(label.slice(0, -suffix.length));
  }
  return taken;
}

/** Every service's generated hostname label (`<service>-<scope>`, see generatedLabel), with its service. */
export async function generatedLabels(store: Store): Promise<Map<string, ServiceRecord>> {
  const [scopes, services] = await Promise.all([hostnameScopes(store, null), store.projects.listAllServices()]);
  const labels = new Map<string, ServiceRecord>();
  for (const service of services) {
    const label = generatedLabel(service, scopes.get(service.environmentId) ?? '');
    if (label) labels.set(label, service);
  }
  return labels;
}

/** Where a project's services go when no environment is named (see defaultEnvironment). */
async function defaultEnvironmentOf(store: Store, projectId: string): Promise<EnvironmentRecord> {
  const environment = defaultEnvironment(await store.environments.list([projectId]));
  // Every project is created with one and keeps at least one (EnvironmentService.delete).
  if (!environment) throw new ConflictError('This project has no environment; create one first');
  return environment;
}

/** One service's hostname scope. */
async function hostnameScopeOf(store: Store, service: ServiceRecord): Promise<string> {
  const [project, environment] = await Promise.all([store.projects.get(service.projectId), store.environments.get(service.environmentId)]);
  return project && environment ? hostnameScope(project.slug, environment) : '';
}
