import { ValidationError } from '../domain/errors.js';
import { ENGINE_SPECS, engineOf, isEnginePassword, type DatabaseEngine } from '../domain/database-engines.js';
import { newId } from '../domain/ids.js';
import { slugify, uniqueSlug } from '../domain/slug.js';
import type { ProjectRecord, ServiceRecord, StorageSource } from '../domain/types.js';
import { STORAGE_SERVER } from '../domain/storage-server.js';
import { assertEnvKey, cleanName, normalizeHostname, splitGitUrlCredential } from '../domain/validation.js';
import { assertScope, assertWrite, type Actor } from '../domain/access.js';
import { generatedHostname, hostnameScope, type EnvironmentRecord } from '../domain/environments.js';
import type { ServiceDeps } from '../platform/deps.js';
import { environmentFor, projectFor } from '../platform/lookup.js';
import { generatePassword } from '../platform/secret-box.js';
import type { EnvService } from '../env/env.service.js';
import type { HostPortAllocator } from './host-port-allocator.js';
import { DEFAULT_SCALE } from '../domain/service-scale.js';
import { scaleAfter, type CapacityOf } from './service-scale-rules.js';
import { placementAfter } from './service-placement-rules.js';
import {
  serviceSources,
  sourceKindOf,
  type CreateServiceInput,
  type ServiceSourceInput,
  type ServiceSourceKind,
} from './project.inputs.js';
import { presentService, type ServiceView } from './project-views.js';
import { deployTriggersOf } from '../git-hooks/trigger-settings.js';
import { blankToNull, cleanBranch, relativePath } from './service-fields.js';
import { defaultEnvironmentOf, slugsTakenIn } from './service-placement.js';
import { assertVolumesFit } from '../volumes/volume.inputs.js';
import { holderOf } from '../cluster/service-holders.js';

const DEFAULT_INTERNAL_PORT = 3000;

type Variant =
  | { kind: 'repository'; repoFullName: string | null; repoUrl: string | null; urlCredential: string | null }
  | { kind: 'image'; image: string }
  | { kind: 'database'; engine: DatabaseEngine }
  | StorageSource;

/** A storage instance's settings, its key pair made by the caller (StorageCatalog): the wire cannot give them. */
export type StorageSettings = Omit<StorageSource, 'kind'>;

/** Creating a service: from a repository, an image, a database engine, or (StorageCatalog) a storage instance. */
export class ServiceCreation {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly env: EnvService,
    private readonly hostPorts: HostPortAllocator,
    /** The servers' free room: a reservation no server can hold is refused at once. */
    private readonly capacity?: CapacityOf,
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
    const scale = await scaleAfter(
      DEFAULT_SCALE,
      { replicas: input.replicas, resources: input.resources },
      { config: this.deps.config, stateful: variant.kind === 'database' || variant.kind === 'storage', capacity: this.capacity },
    );
    const placement = await placementAfter(this.deps, input.placement ?? null, variant.kind === 'database' || variant.kind === 'storage');
    const volumes = input.volumes ?? [];
    assertVolumesFit(
      volumes,
      variant.kind === 'database' ? ENGINE_SPECS[variant.engine].dataDir : variant.kind === 'storage' ? STORAGE_SERVER.dataDir : null,
    );
    const now = this.deps.clock.now();

    const scope = hostnameScope(project.slug, environment);
    const service = await this.deps.store.transaction(async (tx) => {
      const slug = uniqueSlug(slugify(name), await slugsTakenIn(tx, environment, scope));
      const hostPort = await this.hostPorts.allocate(tx);
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
        ...scale,
        placement,
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
        ...deployTriggersOf(input, variant.kind, this.deps.secrets),
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
      if (volumes.length > 0) await tx.volumes.replace(record.id, volumes, now);
      await tx.projects.update(project.id, { updatedAt: now });
      return record;
    });
    // A database or storage instance starts on the local server (holdersOf: no placement row).
    const holder = await holderOf(this.deps.store, service);
    return presentService(service, { hostnameScope: scope, domains: [], secrets: this.deps.secrets, poll: null, holder }, this.deps.config);
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
