import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { NotFoundError, UnauthorizedError, ValidationError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { Access, ApiKeyRecord } from '../domain/types.js';
import { assertAdministrator, type Actor } from '../domain/access.js';
import type { ServiceDeps } from '../platform/deps.js';
import { VersionedCache } from '../platform/versioned-cache.js';
import type { Table } from '../persistence/store.js';
import type { ApiKeyView } from './account-views.js';

/** The key cache reads the keys alone: a deployment or a project change leaves it be. */
const KEY_TABLES: readonly Table[] = ['ApiKey'];

const TOKEN_PREFIX = 'slw_';
/** lastUsedAt is a hint, not an audit log: writing it on every request would cost a write per read. */
const LAST_USED_RESOLUTION_MS = 60_000;

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

function displayPrefix(token: string): string {
  return token.slice(0, TOKEN_PREFIX.length + 8);
}

export function presentApiKey(key: ApiKeyRecord): ApiKeyView {
  return {
    id: key.id,
    name: key.name,
    access: key.access,
    projectIds: key.projectIds,
    prefix: key.prefix,
    createdAt: key.createdAt.toISOString(),
    lastUsedAt: key.lastUsedAt ? key.lastUsedAt.toISOString() : null,
  };
}

const keyEvent = (key: ApiKeyRecord) => ({ apiKeyId: key.id, name: key.name, access: key.access, projectIds: key.projectIds });

export class ApiKeyService {
  /** Keys by token hash, dropped by any write here, and after 2 s for keys revoked by the CLI. */
  private readonly keyCache = new VersionedCache<string, ApiKeyRecord>(() => this.deps.store.versionOf(KEY_TABLES), 1000, 2000);

  constructor(private readonly deps: ServiceDeps) {}

  /** Resolves a bearer token to an actor, or throws 401. Keys are looked up by their SHA-256. */
  async authenticate(token: string | undefined): Promise<Actor> {
    if (!token) throw new UnauthorizedError('Missing API key: send Authorization: Bearer <key>');
    const hash = hashToken(token);
    const version = this.deps.store.versionOf(KEY_TABLES);
    let key = this.keyCache.get(hash);
    if (!key) {
      key = (await this.deps.store.apiKeys.getByHash(hash)) ?? undefined;
      if (key) this.keyCache.set(hash, key, version);
    }
    if (!key || !timingSafeEqual(Buffer.from(key.tokenHash), Buffer.from(hash))) {
      throw new UnauthorizedError('Unknown or revoked API key');
    }
    const now = this.deps.clock.now();
    if (!key.lastUsedAt || now.getTime() - key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      await this.deps.store.apiKeys.update(key.id, { lastUsedAt: now });
    }
    return { keyId: key.id, access: key.access, projectIds: key.projectIds };
  }

  /** Makes `token` an all-project write key; running it again with the same token changes nothing. */
  async bootstrap(token: string): Promise<void> {
    if (token.length < 16) throw new ValidationError('BOOTSTRAP_API_KEY', 'BOOTSTRAP_API_KEY must be at least 16 characters');
    const hash = hashToken(token);
    if (await this.deps.store.apiKeys.getByHash(hash)) return;
    await this.deps.store.apiKeys.insert({
      id: newId(),
      name: 'bootstrap',
      access: 'write',
      projectIds: null,
      prefix: displayPrefix(token),
      tokenHash: hash,
      createdAt: this.deps.clock.now(),
      lastUsedAt: null,
    });
  }

  async create(
    actor: Actor,
    input: { name: string; access: Access; projectIds?: string[] | null | undefined },
  ): Promise<{ apiKey: ApiKeyView; token: string }> {
    this.assertAdmin(actor);
    if (input.projectIds && input.projectIds.length === 0) {
      // An empty list reading as "every project" would be a dangerous surprise.
      throw new ValidationError('projectIds', 'projectIds must name at least one project; omit it (or send null) for all projects');
    }
    const projectIds = input.projectIds ? [...new Set(input.projectIds)] : null;
    if (projectIds) {
      for (const [i, id] of projectIds.entries()) {
        if (!(await this.deps.store.projects.get(id)))
          throw new ValidationError(`projectIds.${i}`, `Project ${JSON.stringify(id)} does not exist`);
      }
    }
    return this.mint(input.name, input.access, projectIds);
  }

  /** Used by the CLI on the server's host, where whoever runs it already owns the data. */
  async mint(name: string, access: Access, projectIds: string[] | null): Promise<{ apiKey: ApiKeyView; token: string }> {
    const token = TOKEN_PREFIX + randomBytes(24).toString('base64url');
    const record: ApiKeyRecord = {
      id: newId(),
      name,
      access,
      projectIds,
      prefix: displayPrefix(token),
      tokenHash: hashToken(token),
      createdAt: this.deps.clock.now(),
      lastUsedAt: null,
    };
    await this.deps.store.transaction(async (tx) => {
      await tx.apiKeys.insert(record);
      await this.deps.events.publish('api_key.created', keyEvent(record), { store: tx });
    });
    return { apiKey: presentApiKey(record), token };
  }

  async list(actor: Actor): Promise<ApiKeyView[]> {
    this.assertAdmin(actor);
    return (await this.deps.store.apiKeys.list()).map(presentApiKey);
  }

  async delete(actor: Actor, id: string): Promise<void> {
    this.assertAdmin(actor);
    const key = await this.deps.store.apiKeys.get(id);
    if (!key) throw new NotFoundError('API key', id);
    await this.deps.store.transaction(async (tx) => {
      await tx.apiKeys.delete(id);
      await this.deps.events.publish('api_key.deleted', keyEvent(key), { store: tx });
    });
  }

  private assertAdmin(actor: Actor): void {
    assertAdministrator(actor, 'manage API keys');
  }
}
