import { UniqueConstraintViolationException, type EntityName, type FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { ConflictError } from '../domain/errors.js';

export type Patch<T> = Partial<Omit<T, 'id'>>;
/** A row filter, for repositories that build one in parts (the ORM's own type, named here so only this layer imports it). */
export type Where<T> = FilterQuery<T>;

/**
 * Counts writes per table, so that a cache is dropped by a write to what it was read from and by no
 * other: one global counter emptied every cache (API keys, database endpoints, the project list,
 * overviews) on any write anywhere, a key's last-use stamp included. A version over some tables is
 * the sum of their counters: counters only grow, so it changes exactly when one of them is written.
 */
export class WriteCounter {
  /** Every write, whatever the table. */
  count = 0;
  private readonly tables = new Map<string, number>();

  constructor(private readonly parent?: WriteCounter) {}

  bump(table: string): void {
    this.count++;
    this.tables.set(table, (this.tables.get(table) ?? 0) + 1);
    this.parent?.bump(table);
  }

  /** The version of these tables. */
  of(tables: readonly string[]): number {
    let version = 0;
    for (const table of tables) version += this.tables.get(table) ?? 0;
    return version;
  }

  /** The tables written through this counter (a transaction's, made with `new WriteCounter(parent)`). */
  written(): string[] {
    return [...this.tables.keys()];
  }
}

/** A table's name, as caches name what they read: the entity's class name (`Service`, `Deployment`...). */
export function tableOf(entity: object | string): string {
  return typeof entity === 'string' ? entity : (entity as { name: string }).name;
}

/**
 * What the repositories of one store share: the entity manager (the transaction's inside one), whether
 * that is a transaction, and the write counter the store's versions read.
 */
export interface Session {
  readonly em: EntityManager;
  readonly inTransaction: boolean;
  readonly writes: WriteCounter;
}

/**
 * The base of every repository. Every call runs on a fresh fork of the entity manager (or on the
 * transaction's), returns plain records and keeps no identity map between calls, so nothing
 * ORM-shaped leaks out and concurrent requests never share state.
 */
export abstract class Repository {
  constructor(protected readonly session: Session) {}

  protected written(entity: object): void {
    this.session.writes.bump(tableOf(entity));
  }

  /** Outside a transaction, a fresh fork per call; inside, the transaction's own manager (SQLite has one connection). */
  protected fork(): EntityManager {
    return this.session.inTransaction ? this.session.em : this.session.em.fork({ clear: true });
  }

  /**
   * Reads go through the query builder and come back as plain rows (names and types mapped, no
   * entity instances): hydrating entities cost 0.1 ms a row, a tenth of a second for 1,000 services.
   */
  protected async rows<T extends object>(
    entity: EntityName<T>,
    where: FilterQuery<T>,
    orderBy?: Record<string, 'asc' | 'desc'>,
    limit?: number,
  ): Promise<T[]> {
    const qb = this.fork()
      .createQueryBuilder(entity)
      .select('*')
      .where(where as never);
    if (orderBy) qb.orderBy(orderBy as never);
    if (limit !== undefined) qb.limit(limit);
    return (await qb.execute('all', true)) as T[];
  }

  protected async row<T extends object>(entity: EntityName<T>, where: FilterQuery<T>): Promise<T | null> {
    return (await this.rows(entity, where, undefined, 1))[0] ?? null;
  }

  protected async insertRow<T extends object>(entity: EntityName<T>, data: T, what: string): Promise<T> {
    try {
      this.written(entity);
      await this.fork().insert(entity, data);
      return data;
    } catch (error) {
      throw uniqueToConflict(error, what);
    }
  }

  protected async updateRow<T extends object>(entity: EntityName<T>, id: string, patch: Patch<NoInfer<T>>, what: string): Promise<void> {
    if (Object.keys(patch).length === 0) return;
    try {
      this.written(entity);
      await this.fork().nativeUpdate(entity, { id } as never, patch as never);
    } catch (error) {
      throw uniqueToConflict(error, what);
    }
  }

  protected async deleteRows<T extends object>(entity: EntityName<T>, where: FilterQuery<T>): Promise<void> {
    this.written(entity);
    await this.fork().nativeDelete(entity, where as never);
  }
}

/** A JSON column as SQLite hands it back through the query builder (text); PostgreSQL's is already parsed. */
export function fromJson<T>(value: T | string): T {
  return typeof value === 'string' ? (JSON.parse(value) as T) : value;
}

function uniqueToConflict(error: unknown, what: string): unknown {
  if (error instanceof UniqueConstraintViolationException) {
    return new ConflictError(`This ${what} conflicts with an existing one`);
  }
  return error;
}
