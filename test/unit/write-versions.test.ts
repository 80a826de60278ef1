import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/persistence/database.js';

// A cache is dropped by a write to a table it reads from and by no other (issue 32): one global
// version used to empty every cache (API keys, the project list, overviews) on any write anywhere.
describe('write versions per table', () => {
  let db: Database;
  beforeAll(async () => {
    db = await openDatabase({ dataDir: ':memory:' });
  });
  afterAll(async () => {
    await db.close();
  });

  const key = (id: string) => ({
    id,
    name: id,
    tokenHash: `hash-${id}`,
    prefix: 'slw_abc',
    access: 'read' as const,
    projectIds: null,
    createdAt: new Date(),
    lastUsedAt: null,
  });

  it('a write moves the version of its own table only', async () => {
    const store = db.store;
    const keys = store.versionOf(['ApiKey']);
    const settings = store.versionOf(['Setting']);
    const both = store.versionOf(['ApiKey', 'Setting']);
    await store.settings.put('some-setting', '"x"', new Date());
    expect(store.versionOf(['ApiKey'])).toBe(keys);
    expect(store.versionOf(['Setting'])).toBeGreaterThan(settings);
    expect(store.versionOf(['ApiKey', 'Setting'])).toBeGreaterThan(both);
    await store.apiKeys.insert(key('k1'));
    expect(store.versionOf(['ApiKey'])).toBeGreaterThan(keys);
  });

  it('a transaction moves the tables it wrote again when it ends, committed or rolled back', async () => {
    const store = db.store;
    const keys = store.versionOf(['ApiKey']);
    const settings = store.versionOf(['Setting']);
    let inside = 0;
    await expect(
      store.transaction(async (tx) => {
        await tx.apiKeys.insert(key('k2'));
        inside = store.versionOf(['ApiKey']);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(inside).toBeGreaterThan(keys);
    // A read cached during the transaction (at `inside`) is not current after it.
    expect(store.versionOf(['ApiKey'])).toBeGreaterThan(inside);
    expect(store.versionOf(['Setting'])).toBe(settings);
    expect(await store.apiKeys.get('k2')).toBeNull();
  });
});
