import { Migration } from '@mikro-orm/migrations';

/**
 * Backup configurations (cron schedules with a retention), and which configuration made each backup.
 * The daily/weekly/monthly switches of existing backup settings become managed configurations; their
 * next slot is in the past, so the first pass makes the period's backup unless it has one already.
 */
export class Migration20261127090000 extends Migration {
  override name = 'Migration20261127090000';

  override up(): void | Promise<void> {
    this.addSql(
      `create table \`backup_schedules\` (\`id\` text not null primary key, \`service_id\` text not null, \`schedule\` text not null, \`storage\` text not null, \`keep_count\` integer null, \`keep_days\` integer null, \`managed\` text null, \`next_run_at\` datetime not null, \`last_run_at\` datetime null, \`last_error\` text null, \`created_at\` datetime not null, \`updated_at\` datetime not null);`,
    );
    this.addSql(`create index \`backup_schedules_service_id_index\` on \`backup_schedules\` (\`service_id\`);`);
    this.addSql(`create index \`backup_schedules_next_run_at_index\` on \`backup_schedules\` (\`next_run_at\`);`);
    this.addSql(
      `create unique index \`backup_schedules_service_id_managed_unique\` on \`backup_schedules\` (\`service_id\`, \`managed\`);`,
    );

    this.addSql(`alter table \`backups\` add column \`schedule_id\` text null;`);
    this.addSql(`create index \`backups_schedule_id_index\` on \`backups\` (\`schedule_id\`);`);

    for (const [period, schedule, keep] of MANAGED) {
      this.addSql(
        `insert into \`backup_schedules\` (\`id\`, \`service_id\`, \`schedule\`, \`storage\`, \`keep_count\`, \`keep_days\`, \`managed\`, \`next_run_at\`, \`last_run_at\`, \`last_error\`, \`created_at\`, \`updated_at\`) select lower(hex(randomblob(8))), \`service_id\`, '${schedule}', \`storage\`, \`${keep}\`, null, '${period}', \`updated_at\`, null, null, \`updated_at\`, \`updated_at\` from \`backup_settings\` where \`automatic_enabled\` = 1 and \`${period}_enabled\` = 1;`,
      );
    }
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists \`backup_schedules\`;`);
    this.addSql(`drop index \`backups_schedule_id_index\`;`);
    this.addSql(`alter table \`backups\` drop column \`schedule_id\`;`);
  }
}

/** As src/backups/managed-schedules.ts has them (a migration keeps its own copy: the code may change later). */
const MANAGED = [
  ['daily', '0 0 * * *', 'keep_daily'],
  ['weekly', '0 0 * * 1', 'keep_weekly'],
  ['monthly', '0 0 1 * *', 'keep_monthly'],
] as const;
