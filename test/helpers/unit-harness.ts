import { afterEach, beforeEach, expect } from 'vitest';
import type { DatabaseEngine } from '../../src/domain/database-engines.js';
import type { ServiceRecord } from '../../src/domain/types.js';
import type { Actor, CreateServiceInput } from '../../src/index.js';
import { createHarness, type Harness } from './harness.js';

/*
 * What the use-case tests of test/unit (projects, env, domains, deployments, accounts) share: the
 * actors, a fresh harness per test, and shorthands for the records they create.
 */

export const admin: Actor = { keyId: 'admin', access: 'write', projectIds: null };
export const reader: Actor = { keyId: 'reader', access: 'read', projectIds: null };
export const scoped = (...projectIds: string[]): Actor => ({ keyId: 'scoped', access: 'write', projectIds });

export const PASSWORD_ALPHABET = /^[ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789]{32}$/;

/** The current test's harness (a live binding: read it inside tests and hooks). */
export let h: Harness;

/** Gives every test of the calling file a fresh harness (SQLite in memory), closed after it. */
export function freshHarnessPerTest(): void {
  beforeEach(async () => {
    h = await createHarness();
  });
  afterEach(async () => {
    await h.close();
  });
}

/** For a test that needs a harness of its own: closes the current one and opens another. */
export async function replaceHarness(opts?: Parameters<typeof createHarness>[0]): Promise<Harness> {
  await h.close();
  h = await createHarness(opts);
  return h;
}

export const repo = (name: string, extra: Partial<CreateServiceInput> = {}): CreateServiceInput => ({
  name,
  repoFullName: `acme/${name.toLowerCase().replace(/\W+/g, '-')}`,
  ...extra,
});
export const database = (name: string, engine: DatabaseEngine, extra: Partial<CreateServiceInput> = {}): CreateServiceInput => ({
  name,
  repoUrl: 'database',
  repoFullName: `database:${engine}`,
  ...extra,
});

export async function project(name = 'Shop') {
  return h.services.projects.create(admin, { name, description: '' });
}

export async function record(serviceId: string): Promise<ServiceRecord> {
  const service = await h.database.store.projects.getService(serviceId);
  if (!service) throw new Error(`no service ${serviceId}`);
  return service;
}

export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return expect.fail('expected a rejection');
}

/** Pulls the next event of a stream, failing if none arrives within `ms`. */
export async function nextEvent<T>(stream: AsyncGenerator<T>, ms = 3_000): Promise<IteratorResult<T>> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      stream.next(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no stream event within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export async function collect<T>(stream: AsyncGenerator<T>, max = 50): Promise<T[]> {
  const events: T[] = [];
  for (let i = 0; i < max; i++) {
    const result = await nextEvent(stream);
    if (result.done) return events;
    events.push(result.value);
  }
  throw new Error('stream did not end');
}
