import { ConflictError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { slugify, uniqueSlug } from '../domain/slug.js';
import type { DomainRecord, ProjectRecord } from '../domain/types.js';
import { assertAllProjects, assertProjectVisible, assertWrite, type Actor } from '../domain/access.js';
import type { ServiceDeps } from '../platform/deps.js';
import { projectFor } from '../platform/lookup.js';
import { groupBy } from '../platform/group-by.js';
import { cleanName } from '../domain/validation.js';
import { CATALOG_TABLES, HOLDER_TABLES, VersionedCache } from '../platform/versioned-cache.js';
import { holdersOf } from '../cluster/service-holders.js';
import { presentProject, presentService } from './project-views.js';
import type { ServiceRemoval } from './service-removal.js';
import { PROJECT_PAGE_DEFAULT, type ProjectInput, type ProjectPageInput, type ProjectPatchInput } from './project.inputs.js';
import type { ProjectPage, ProjectView } from './project-views.js';
import type { ProxyResultView } from '../routing/routing-views.js';
import { NotFoundError, ValidationError } from '../domain/errors.js';
import { FIRST_ENVIRONMENT_NAME } from '../domain/environments.js';
import { hostnameScopes } from '../platform/hostname-scopes.js';

/** The list shows each database's server and its state (HOLDER_TABLES) besides the catalog. */
const LIST_TABLES = [...CATALOG_TABLES, ...HOLDER_TABLES];

export class ProjectService {
  /** Every project's view with where it sorts (creation time, then id), read once per version of the catalog. */
  private readonly listCache = new VersionedCache<'all', ListedProject[]>(() => this.deps.store.versionOf(LIST_TABLES), 1);

  constructor(
    private readonly deps: ServiceDeps,
    private readonly removal: ServiceRemoval,
  ) {}

  /** Every project the key may see, oldest first (the MCP tools and the use cases). */
  async list(actor: Actor): Promise<ProjectView[]> {
    return (await this.listed(actor)).map((p) => p.view);
  }

  /**
   * One page of the projects the key may see, oldest first: `limit` of them (PROJECT_PAGE_DEFAULT unless
   * given) after `cursor`, and the cursor of the next page, null on the last. A cursor names the place
   * after a project (its creation time and id), not an index: projects made or deleted between two
   * pages neither repeat nor skip one.
   */
  async page(actor: Actor, input: ProjectPageInput = {}): Promise<ProjectPage> {
    const limit = input.limit ?? PROJECT_PAGE_DEFAULT;
    const after = input.cursor === undefined ? null : decodeCursor(input.cursor);
    const listed = await this.listed(actor);
    const start = after === null ? 0 : listed.findIndex((p) => compareKeys(p.key, after) > 0);
    const slice = start < 0 ? [] : listed.slice(start, start + limit);
    const more = start >= 0 && start + limit < listed.length;
    return { projects: slice.map((p) => p.view), nextCursor: more ? encodeCursor(slice.at(-1)!.key) : null };
  }

  /** The whole list is read once per catalog version; a scoped key gets its part of it. */
  private async listed(actor: Actor): Promise<ListedProject[]> {
    const version = this.deps.store.versionOf(LIST_TABLES);
    let all = this.listCache.get('all');
    if (!all) {
      const records = await this.deps.store.projects.list(null);
      const views = await this.present(records, true);
      all = records.map((record, i) => ({ key: [record.createdAt.getTime(), record.id] as const, view: views[i]! }));
      this.listCache.set('all', all, version);
    }
    const visible = actor.projectIds;
    return visible ? all.filter((project) => visible.includes(project.view.id)) : all;
  }

  /** By slug, or by id (the general API's `GET /api/projects/:id`): slugs and ids never look alike. */
  async getBySlug(actor: Actor, slug: string): Promise<ProjectView> {
    const project = (await this.deps.store.projects.getBySlug(slug)) ?? (await this.deps.store.projects.get(slug));
    if (!project) throw new NotFoundError('Project', slug);
    assertProjectVisible(actor, project.id, 'Project', slug);
    return (await this.present([project]))[0]!;
  }

  async get(actor: Actor, projectId: string): Promise<ProjectView> {
    const project = await projectFor(this.deps.store, actor, projectId);
    return (await this.present([project]))[0]!;
  }

  async create(actor: Actor, input: ProjectInput): Promise<ProjectView> {
    assertWrite(actor);
    assertAllProjects(actor, 'create projects');
    const name = cleanName(input.name);
    const now = this.deps.clock.now();
    const base = slugify(name);
    // Two creates with one name can race for a slug: the unique index decides, the loser takes the next.
    for (let attempt = 0; ; attempt++) {
      const project: ProjectRecord = {
        id: newId(),
        name,
        slug: uniqueSlug(base, await this.deps.store.projects.slugsLike(base)),
        description: input.description ?? '',
        status: 'idle',
        createdAt: now,
        updatedAt: now,
      };
      try {
        await this.deps.store.transaction(async (tx) => {
          await tx.projects.insert(project);
          // Its first environment has its id: see isFirstEnvironment.
          await tx.environments.insert({
            id: project.id,
            projectId: project.id,
            name: FIRST_ENVIRONMENT_NAME,
            createdAt: now,
            updatedAt: now,
          });
        });
        return presentProject(project, []);
      } catch (error) {
        if (!(error instanceof ConflictError) || attempt >= 5) throw error;
      }
    }
  }

  /** Renaming keeps the slug: URLs and scripts that use it keep working. */
  async update(actor: Actor, projectId: string, input: ProjectPatchInput): Promise<ProjectView> {
    assertWrite(actor);
    const project = await projectFor(this.deps.store, actor, projectId);
    const patch: Partial<ProjectRecord> = { updatedAt: this.deps.clock.now() };
    if (input.name !== undefined) patch.name = cleanName(input.name);
    if (input.description !== undefined) patch.description = input.description;
    await this.deps.store.projects.update(project.id, patch);
    return this.get(actor, project.id);
  }

  async delete(actor: Actor, projectId: string): Promise<ProxyResultView> {
    assertWrite(actor);
    const project = await projectFor(this.deps.store, actor, projectId);
    return this.removal.removeProject(project);
  }

  /** Five queries whatever the number of projects; `everything` skips long IN lists when all are shown. */
  private async present(projects: ProjectRecord[], everything = false): Promise<ProjectView[]> {
    const services = everything
      ? await this.deps.store.projects.listAllServices()
      : await this.deps.store.projects.listServices(projects.map((p) => p.id));
    const [domains, scopes, polls, holders] = await Promise.all([
      this.deps.store.domains.list(everything ? null : services.map((s) => s.id)),
      hostnameScopes(this.deps.store, everything ? null : projects.map((p) => p.id)),
      this.deps.store.gitHooks.pollsOf(services.filter((s) => s.pollIntervalSeconds !== null).map((s) => s.id)),
      holdersOf(this.deps.store, services, everything),
    ]);
    const domainsOf = groupBy(domains, (d) => d.serviceId);
    const pollOf = new Map(polls.map((p) => [p.serviceId, p]));
    const servicesOf = groupBy(services, (s) => s.projectId);
    return projects.map((project) =>
      presentProject(
        project,
        (servicesOf.get(project.id) ?? []).map((s) =>
          presentService(
            s,
            {
              hostnameScope: scopes.get(s.environmentId) ?? '',
              domains: domainsOf.get(s.id) ?? ([] as DomainRecord[]),
              secrets: this.deps.secrets,
              poll: pollOf.get(s.id) ?? null,
              holder: holders.get(s.id) ?? null,
            },
            this.deps.config,
          ),
        ),
      ),
    );
  }
}

type SortKey = readonly [number, string];
interface ListedProject {
  key: SortKey;
  view: ProjectView;
}

function compareKeys(a: SortKey, b: SortKey): number {
  return a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
}

/** Opaque to callers: base64url of `<creation ms>.<id>`. */
function encodeCursor(key: SortKey): string {
  return Buffer.from(`${key[0]}.${key[1]}`).toString('base64url');
}

function decodeCursor(cursor: string): SortKey {
  const text = Buffer.from(cursor, 'base64url').toString();
  const dot = text.indexOf('.');
  const ms = Number(text.slice(0, dot));
  const id = text.slice(dot + 1);
  if (dot < 1 || !Number.isSafeInteger(ms) || !/^[A-Za-z0-9_-]{1,64}$/.test(id)) {
    throw new ValidationError('cursor', 'cursor is not one this API gave: pass nextCursor from the previous page');
  }
  return [ms, id];
}
