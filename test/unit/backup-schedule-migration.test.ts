import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MikroORM } from '@mikro-orm/core';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, ormOptions, type DatabaseConfig } from '../../src/persistence/database.js';
import { createScratchDatabase } from '../helpers/postgres.js';

/*
 * Backup settings saved before configurations existed: the migration that adds them turns each enabled
 * daily/weekly/monthly switch into a managed configuration, due at once (the period under way gets its
 * backup unless it has one), on both dialects.
 */

const BEFORE = 'Migration20261126113000';
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function upgradeFrom(config: DatabaseConfig): Promise<void> {
  // The schema as the release before configurations left it, with two services' settings.
  const orm = await MikroORM.init(await ormOptions(config));
  try {
    await orm.migrator.up({ to: BEFORE });
    const saved = new Date('2026-11-20T10:00:00.000Z');
    const settings = {
      storage: 'disk' as const,
      dailyEnabled: true,
      weeklyEnabled: false,
      monthlyEnabled: true,
      keepDaily: 5,
      keepWeekly: 4,
      keepMonthly: 6,
      createdAt: saved,
      updatedAt: saved,
    };
    // The table's columns of then, by name: the entity has grown columns since (a drill frequency).
    const columns = [
      'service_id',
      'automatic_enabled',
      'storage',
      'daily_enabled',
      'weekly_enabled',
      'monthly_enabled',
      'keep_daily',
      'keep_weekly',
      'keep_monthly',
      'created_at',
      'updated_at',
    ];
    const bool = (b: boolean) => (config.databaseUrl ? b : b ? 1 : 0);
    const date = (d: Date) => (config.databaseUrl ? d : d.getTime());
    for (const [serviceId, automatic] of [
      ['automaticservice', true],
      ['manualonlyservice', false],
    ] as const)
      await orm.em
        .getConnection()
        .execute(`insert into backup_settings (${columns.join(', ')}) values (${columns.map(() => '?').join(', ')})`, [
          serviceId,
          bool(automatic),
          settings.storage,
          bool(settings.dailyEnabled),
          bool(settings.weeklyEnabled),
          bool(settings.monthlyEnabled),
          settings.keepDaily,
          settings.keepWeekly,
          settings.keepMonthly,
          date(settings.createdAt),
          date(settings.updatedAt),
        ]);
  } finally {
    await orm.close(true);
  }
  const database = await openDatabase(config);
  try {
    const schedules = await database.store.backupSchedules.list(null);
    expect(schedules.map((s) => [s.serviceId, s.managed, s.schedule, s.keepCount, s.keepDays, s.storage]).sort()).toEqual([
      ['automaticservice', 'daily', '0 0 * * *', 5, null, 'disk'],
      ['automaticservice', 'monthly', '0 0 1 * *', 6, null, 'disk'],
    ]);
    for (const s of schedules) {
      expect(s.id).toMatch(/^[0-9a-f]{16}$/);
      expect(s.nextRunAt.toISOString()).toBe('2026-11-20T10:00:00.000Z');
      expect(s).toMatchObject({ lastRunAt: null, lastError: null });
    }
    expect(new Set(schedules.map((s) => s.id)).size).toBe(2);
  } finally {
    await database.close();
  }
}

describe('the backup configurations migration', () => {
  it('SQLite: makes managed configurations of the enabled switches', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-schedules-migration-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    await upgradeFrom({ dataDir });
  });

  it('PostgreSQL: makes managed configurations of the enabled switches', { timeout: 60_000 }, async () => {
    const scratch = await createScratchDatabase();
    cleanups.push(() => scratch.drop());
    await upgradeFrom({ databaseUrl: scratch.url, dataDir: ':memory:' });
  });
});
