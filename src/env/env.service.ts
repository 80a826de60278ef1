import { ConflictError, NotFoundError, ValidationError } from '../domain/errors.js';
import { describeProblem, resolveValue, type ProjectEnv } from '../domain/env-references.js';
import { newId } from '../domain/ids.js';
import type { EnvVarRecord, ServiceRecord } from '../domain/types.js';
import { assertNotStorageVariable, storageOf, storageVariables } from '../domain/storage-server.js';
import { assertEnvKey } from '../domain/validation.js';
import type { Store } from '../persistence/store.js';
import { assertWrite, type Actor } from '../domain/access.js';
import type { ServiceDeps } from '../platform/deps.js';
import { projectFor, serviceFor } from '../platform/lookup.js';
import type { EnvVarView, SharedEnvView } from './env-views.js';
import { MAX_SHARED_VARIABLES, parseSharedEnv, SHARED_SLUG, sharedEnvKey, type SharedEnvEntry } from './shared-env.js';
import { previewLinks } from './preview-links.js';

const MAX_VALUE_LENGTH = 64 * 1024;

interface ProjectEnvSnapshot {
  env: ProjectEnv;
  /** `slug.KEY` of every value that is a secret. */
  secretKeys: Set<string>;
  /** `slug.KEY` of the secrets no API answer resolves: a storage instance's, shown once (docs/storage.md). */
  sealedKeys: Set<string>;
}

export class EnvService {
  constructor(private readonly deps: ServiceDeps) {}

  /** Creates the variable or updates its value. A variable once secret stays secret unless `secret: false` is sent. */
  async set(actor: Actor, serviceId: string, input: { key: string; value: string; secret?: boolean | undefined }): Promise<void> {
    assertWrite(actor);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    assertNotStorageVariable(service, input.key);
    await this.upsert(this.deps.store, service.id, input);
    await this.deps.store.projects.updateService(service.id, { updatedAt: this.deps.clock.now() });
  }

  /** The service's own variables as the overview lists them. */
  async list(actor: Actor, serviceId: string): Promise<EnvVarView[]> {
    return this.listForService(await serviceFor(this.deps.store, actor, serviceId));
  }

  /** One variable as the overview lists it. */
  async view(actor: Actor, serviceId: string, envId: string): Promise<EnvVarView> {
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const found = (await this.listForService(service)).find((v) => v.id === envId);
    if (!found) throw new NotFoundError('Environment variable', envId);
    return found;
  }

  /** Sets a variable and answers it as listed: the general API's POST. */
  async setAndView(
    actor: Actor,
    serviceId: string,
    input: { key: string; value: string; secret?: boolean | undefined },
  ): Promise<EnvVarView> {
    await this.set(actor, serviceId, input);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const stored = await this.deps.store.env.getByKey(service.id, input.key);
    return this.view(actor, serviceId, stored!.id);
  }

  /** Changes the value (and secrecy) of a variable named by id; the key stays. */
  async updateById(
    actor: Actor,
    serviceId: string,
    envId: string,
    input: { value: string; secret?: boolean | undefined },
  ): Promise<EnvVarView> {
    assertWrite(actor);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const envVar = await this.deps.store.env.get(envId);
    if (!envVar || envVar.serviceId !== service.id) throw new NotFoundError('Environment variable', envId);
    assertNotStorageVariable(service, envVar.key);
    await this.upsert(this.deps.store, service.id, { key: envVar.key, ...input });
    await this.deps.store.projects.updateService(service.id, { updatedAt: this.deps.clock.now() });
    return this.view(actor, serviceId, envId);
  }

  /** Shared project variables: secrets masked. */
  async listShared(actor: Actor, projectId: string): Promise<SharedEnvView> {
    const project = await projectFor(this.deps.store, actor, projectId);
    return this.presentShared(await this.readShared(project.id));
  }

  /**
   * Replaces the shared variables of a project. An entry without `value` keeps the stored value of
   * that key (so a secret read back masked can be sent back unchanged); a new key needs one.
   */
  async replaceShared(
    actor: Actor,
    projectId: string,
    entries: Record<string, { value?: string | undefined; secret?: boolean | undefined }>,
  ): Promise<SharedEnvView> {
    assertWrite(actor);
    const project = await projectFor(this.deps.store, actor, projectId);
    const keys = Object.keys(entries);
    if (keys.length > MAX_SHARED_VARIABLES)
      throw new ValidationError('env', `A project may have at most ${MAX_SHARED_VARIABLES} shared variables`);
    const stored = new Map((await this.readShared(project.id)).map((e) => [e.key, e]));
    const now = this.deps.clock.now().toISOString();
    const next: SharedEnvEntry[] = [];
    for (const key of keys.sort()) {
      assertEnvKey(key, `env.${key}`);
      const entry = entries[key]!;
      const existing = stored.get(key);
      if (entry.value === undefined && !existing) throw new ValidationError(`env.${key}.value`, `${key} is new: it needs a value`);
      if (entry.value !== undefined && entry.value.length > MAX_VALUE_LENGTH)
        throw new ValidationError(`env.${key}.value`, `A value may hold at most ${MAX_VALUE_LENGTH} characters`);
      const valueEncrypted = entry.value === undefined ? existing!.valueEncrypted : this.deps.secrets.encrypt(entry.value);
      const secret = entry.secret ?? existing?.secret ?? false;
      const unchanged = existing && entry.value === undefined && secret === existing.secret;
      next.push({ key, valueEncrypted, secret, updatedAt: unchanged ? existing.updatedAt : now });
    }
    await this.deps.store.settings.put(sharedEnvKey(project.id), JSON.stringify(next), this.deps.clock.now());
    return this.presentShared(next);
  }

  private async readShared(projectId: string): Promise<SharedEnvEntry[]> {
    return parseSharedEnv(await this.deps.store.settings.get(sharedEnvKey(projectId)));
  }

  private presentShared(entries: SharedEnvEntry[]): SharedEnvView {
    return Object.fromEntries(
      entries.map((e) => [
        e.key,
        { secret: e.secret, value: e.secret ? '' : this.deps.secrets.decrypt(e.valueEncrypted), updatedAt: e.updatedAt },
      ]),
    );
  }

  /** Shared with service creation, which writes the initial env in its own transaction. */
  async upsert(store: Store, serviceId: string, input: { key: string; value: string; secret?: boolean | undefined }): Promise<void> {
    assertEnvKey(input.key);
    if (input.value.length > MAX_VALUE_LENGTH)
      throw new ValidationError('value', `A value may hold at most ${MAX_VALUE_LENGTH} characters`);
    const now = this.deps.clock.now();
    const valueEncrypted = this.deps.secrets.encrypt(input.value);
    const update = (existing: EnvVarRecord) =>
      store.env.update(existing.id, { valueEncrypted, secret: input.secret ?? existing.secret, updatedAt: now });
    const existing = await store.env.getByKey(serviceId, input.key);
    if (existing) return update(existing);
    try {
      await store.env.insert({
        id: newId(),
        serviceId,
        key: input.key,
        valueEncrypted,
        secret: input.secret ?? false,
        createdAt: now,
        updatedAt: now,
      });
    } catch (error) {
      // A concurrent set of the same new key inserted first: this one is an update then.
      const winner = error instanceof ConflictError ? await store.env.getByKey(serviceId, input.key) : null;
      if (!winner) throw error;
      await update(winner);
    }
  }

  async delete(actor: Actor, serviceId: string, envId: string): Promise<void> {
    assertWrite(actor);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const envVar = await this.deps.store.env.get(envId);
    if (!envVar || envVar.serviceId !== service.id) throw new NotFoundError('Environment variable', envId);
    await this.deps.store.env.delete(envVar.id);
    await this.deps.store.projects.updateService(service.id, { updatedAt: this.deps.clock.now() });
  }

  /** The one way to read a secret back: a deliberate call with a write key, never a list. */
  async reveal(actor: Actor, serviceId: string, envId: string): Promise<{ key: string; value: string; resolvedValue: string }> {
    assertWrite(actor);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const envVar = await this.deps.store.env.get(envId);
    if (!envVar || envVar.serviceId !== service.id) throw new NotFoundError('Environment variable', envId);
    const snapshot = await this.environmentEnv(service);
    const value = this.deps.secrets.decrypt(envVar.valueEncrypted);
    const resolution = resolveValue(value, snapshot.env, { serviceSlug: service.slug, key: envVar.key });
    return {
      key: envVar.key,
      value,
      // A storage instance's secret is shown once, at create (or clone): not here either.
      resolvedValue: resolution.reached.some((ref) => snapshot.sealedKeys.has(ref)) ? '' : resolution.value,
    };
  }

  /** The variables of a service as the overview shows them: secrets masked, references resolved. */
  async listForService(service: ServiceRecord): Promise<EnvVarView[]> {
    const snapshot = await this.environmentEnv(service);
    const vars = await this.deps.store.env.list([service.id]);
    return vars.map((v) => this.present(v, service, snapshot));
  }

  /** Every variable of a service with references resolved: what a container is started with. */
  async resolvedFor(service: ServiceRecord): Promise<{ env: Record<string, string>; problems: string[] }> {
    const snapshot = await this.environmentEnv(service);
    const env: Record<string, string> = {};
    const problems: string[] = [];
    for (const [key, raw] of snapshot.env.get(service.slug) ?? new Map<string, string>()) {
      const resolution = resolveValue(raw, snapshot.env, { serviceSlug: service.slug, key });
      env[key] = resolution.value;
      problems.push(...resolution.problems.map((p) => `${key}: ${describeProblem(p)}`));
    }
    return { env, problems };
  }

  /** Every value of the service that is, or is built from, a secret: what a deployment log must mask. */
  async secretValues(service: ServiceRecord): Promise<string[]> {
    const snapshot = await this.environmentEnv(service);
    const values: string[] = [];
    for (const [key, raw] of snapshot.env.get(service.slug) ?? new Map<string, string>()) {
      const resolution = resolveValue(raw, snapshot.env, { serviceSlug: service.slug, key });
      if (snapshot.secretKeys.has(`${service.slug}.${key}`) || resolution.reached.some((ref) => snapshot.secretKeys.has(ref)))
        values.push(resolution.value);
    }
    for (const ref of snapshot.secretKeys) {
      const [slug, key] = ref.split('.') as [string, string];
      const raw = snapshot.env.get(slug)?.get(key);
      if (raw) values.push(raw);
    }
    return values;
  }

  private present(v: EnvVarRecord, service: ServiceRecord, snapshot: ProjectEnvSnapshot): EnvVarView {
    const ref = `${service.slug}.${v.key}`;
    // What the service gets: a storage instance's derived variable wins over a stored one of its name.
    const raw = snapshot.env.get(service.slug)?.get(v.key) ?? '';
    const stored = this.deps.secrets.decrypt(v.valueEncrypted);
    const resolution = resolveValue(raw, snapshot.env, { serviceSlug: service.slug, key: v.key });
    const usesSecret = v.secret || snapshot.secretKeys.has(ref) || resolution.reached.some((r) => snapshot.secretKeys.has(r));
    return {
      id: v.id,
      key: v.key,
      hasValue: stored.length > 0,
      secret: v.secret,
      value: v.secret ? '' : stored,
      resolvedValue: usesSecret ? '' : resolution.value,
      problems: resolution.problems.map(describeProblem),
      createdAt: v.createdAt.toISOString(),
      updatedAt: v.updatedAt.toISOString(),
    };
  }

  /**
   * Every variable of the services of the service's environment by slug (another environment's
   * services are not there to reference), each starting from the project's shared variables (its
   * own key wins), plus the shared ones themselves under `shared`, so `${shared.KEY}` resolves. A
   * storage instance's slug also holds the variables derived from its row (storageVariables).
   */
  private async environmentEnv(service: ServiceRecord): Promise<ProjectEnvSnapshot> {
    const [own, allShared, links] = await Promise.all([
      this.deps.store.projects.listServicesIn([service.environmentId]),
      this.readShared(service.projectId),
      // A project's first environment is never a preview: no query for it.
      service.environmentId === service.projectId ? null : previewLinks(this.deps.store, service.environmentId),
    ]);
    // A preview sharing the parent's database reaches it under its slug; a fork's preview sees no shared secret.
    const services = links ? [...own, ...links.shared.filter((s) => !own.some((o) => o.slug === s.slug))] : own;
    const shared = links?.fromFork ? allShared.filter((e) => !e.secret) : allShared;
    const slugOf = new Map(services.map((s) => [s.id, s.slug]));
    const vars = await this.deps.store.env.list(services.map((s) => s.id));
    const sharedValues = new Map(shared.map((e) => [e.key, this.deps.secrets.decrypt(e.valueEncrypted)]));
    const sharedSecret = new Set(shared.filter((e) => e.secret).map((e) => e.key));
    const env = new Map<string, Map<string, string>>(services.map((s) => [s.slug, new Map(sharedValues)]));
    const secretKeys = new Set<string>();
    for (const s of services) for (const key of sharedSecret) secretKeys.add(`${s.slug}.${key}`);
    for (const v of vars) {
      const slug = slugOf.get(v.serviceId)!;
      env.get(slug)!.set(v.key, this.deps.secrets.decrypt(v.valueEncrypted));
      if (v.secret) secretKeys.add(`${slug}.${v.key}`);
      else if (sharedSecret.has(v.key)) secretKeys.delete(`${slug}.${v.key}`);
    }
    // A storage instance's connection, from its row: it wins over a stored or shared variable of the same name.
    const sealedKeys = new Set<string>();
    for (const s of services) {
      const storage = storageOf(s);
      if (!storage) continue;
      for (const derived of storageVariables(s, storage, this.deps.secrets.decrypt(storage.secretAccessKeyEncrypted))) {
        const ref = `${s.slug}.${derived.key}`;
        env.get(s.slug)!.set(derived.key, derived.value);
        if (derived.secret) {
          secretKeys.add(ref);
          sealedKeys.add(ref);
        } else secretKeys.delete(ref);
      }
    }
    env.set(SHARED_SLUG, sharedValues);
    for (const key of sharedSecret) secretKeys.add(`${SHARED_SLUG}.${key}`);
    return { env, secretKeys, sealedKeys };
  }
}
