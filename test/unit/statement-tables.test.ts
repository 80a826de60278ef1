import { describe, expect, it } from 'vitest';
import { statementOf } from '../../src/persistence/statement-tables.js';

/* What a statement reads or writes, by table, from its text (src/persistence/statement-tables.ts). */
describe('statementOf', () => {
  it('names every table a read names after FROM or JOIN, in either quoting', () => {
    expect(statementOf('select `s0`.* from `services` as `s0` where `s0`.`id` = ? limit ?')).toEqual({
      kind: 'read',
      tables: ['services'],
    });
    expect(
      statementOf('select s.`id` from `services` s join `servers` v on v.`local` = 1 left join `domains` d on d.`service_id` = s.`id`'),
    ).toEqual({
      kind: 'read',
      tables: ['services', 'servers', 'domains'],
    });
    expect(
      statementOf('SELECT "p0".* FROM "projects" AS "p0" WHERE "p0"."id" IN (SELECT "e"."project_id" FROM "environments" AS "e")'),
    ).toEqual({
      kind: 'read',
      tables: ['projects', 'environments'],
    });
    expect(statementOf('select count(*) as `count` from (select `d0`.`id` from `deployments` as `d0`) as `t`')).toEqual({
      kind: 'read',
      tables: ['deployments'],
    });
  });

  it('names no table when a read depends on more than its tables or names one it cannot read', () => {
    for (const sql of [
      'select 1',
      "select `s0`.* from `sessions` as `s0` where `s0`.`expires_at` > datetime('now')",
      'select "l".* from "leases" as "l" where "l"."until" > now()',
      'select `k`.* from `api_keys` as `k` where `k`.`at` < current_timestamp',
      'select random() as `r` from `services`',
      'select extract(epoch from "d"."created_at") from "deployments" as "d"',
      'select x.* from services x',
    ]) {
      expect(statementOf(sql), sql).toEqual({ kind: 'read', tables: null });
    }
  });

  it('names the table a write writes, whatever its form', () => {
    expect(statementOf('insert into `projects` (`id`) values (?)')).toEqual({ kind: 'write', tables: ['projects'] });
    expect(statementOf('insert or ignore into `job_claims` (`job_id`) values (?)')).toEqual({ kind: 'write', tables: ['job_claims'] });
    expect(statementOf('insert into "servers" ("id") values ($1) on conflict ("id") do update set "name" = excluded."name"')).toEqual({
      kind: 'write',
      tables: ['servers'],
    });
    expect(statementOf('update `api_keys` set `last_used_at` = ? where `id` = ?')).toEqual({ kind: 'write', tables: ['api_keys'] });
    expect(statementOf('delete from "env_vars" where "service_id" = $1')).toEqual({ kind: 'write', tables: ['env_vars'] });
    expect(statementOf('replace into `settings` (`key`, `value`) values (?, ?)')).toEqual({ kind: 'write', tables: ['settings'] });
  });

  it('treats anything else as a statement that may have changed any table', () => {
    for (const sql of [
      'create table `x` (`id` text)',
      'pragma journal_mode = wal',
      'with `t` as (select 1) delete from `x`',
      'vacuum into ?',
    ]) {
      expect(statementOf(sql), sql).toEqual({ kind: 'other', tables: null });
    }
  });
});
