import { Migration } from '@mikro-orm/migrations';

/**
 * Data safety (issue 35): point-in-time recovery (pitr_settings, wal_segments, pitr_restores), services'
 * named volumes, and on backups their kind (dump, volume, base), the counts a restore must hold and the
 * last restore drill; drills on backup configurations (weekly unless set) and on the managed ones' settings.
 */
export class Migration20261128040740 extends Migration {
  override name = 'Migration20261128040740';

  override up(): void | Promise<void> {
    this.addSql(
      `create table \`pitr_restores\` (\`id\` text not null primary key, \`service_id\` text not null, \`target_service_id\` text null, \`at\` datetime not null, \`replace\` integer not null, \`status\` text not null, \`base_backup_id\` text null, \`reached_at\` datetime null, \`error\` text null, \`abort_requested\` integer not null, \`created_at\` datetime not null, \`started_at\` datetime null, \`finished_at\` datetime null);`,
    );
    this.addSql(`create index \`pitr_restores_status_created_at_index\` on \`pitr_restores\` (\`status\`, \`created_at\`);`);
    this.addSql(`create index \`pitr_restores_service_id_created_at_index\` on \`pitr_restores\` (\`service_id\`, \`created_at\`);`);

    this.addSql(
      `create table \`pitr_settings\` (\`service_id\` text not null primary key, \`enabled\` integer not null, \`storage\` text not null, \`storage_id\` text null, \`retention_days\` integer not null, \`base_schedule\` text not null, \`next_base_at\` datetime not null, \`pending_segments\` integer not null, \`pending_bytes\` bigint not null, \`oldest_pending_at\` datetime null, \`last_shipped_at\` datetime null, \`last_error\` text null, \`checked_at\` datetime null, \`created_at\` datetime not null, \`updated_at\` datetime not null);`,
    );

    this.addSql(
      `create table \`service_volumes\` (\`id\` text not null primary key, \`service_id\` text not null, \`name\` text not null, \`mount_path\` text not null, \`created_at\` datetime not null);`,
    );
    this.addSql(`create index \`service_volumes_service_id_index\` on \`service_volumes\` (\`service_id\`);`);
    this.addSql(`create unique index \`service_volumes_service_id_name_unique\` on \`service_volumes\` (\`service_id\`, \`name\`);`);

    this.addSql(
      `create table \`wal_segments\` (\`id\` text not null primary key, \`service_id\` text not null, \`name\` text not null, \`timeline\` integer not null, \`wal_bytes\` bigint not null, \`size_bytes\` bigint not null, \`checksum\` text not null, \`completed_at\` datetime not null, \`stored_at\` datetime not null, \`local_path\` text null, \`object_key\` text null, \`storage_id\` text null);`,
    );
    this.addSql(`create index \`wal_segments_service_id_completed_at_index\` on \`wal_segments\` (\`service_id\`, \`completed_at\`);`);
    this.addSql(`create unique index \`wal_segments_service_id_name_unique\` on \`wal_segments\` (\`service_id\`, \`name\`);`);

    this.addSql(`alter table \`backups\` add column \`kind\` text not null default 'dump';`);
    this.addSql(`alter table \`backups\` add column \`volume\` text null;`);
    this.addSql(`alter table \`backups\` add column \`volume_mode\` text null;`);
    this.addSql(`alter table \`backups\` add column \`wal_start\` text null;`);
    this.addSql(`alter table \`backups\` add column \`counts\` text null;`);
    this.addSql(`alter table \`backups\` add column \`drill_status\` text null;`);
    this.addSql(`alter table \`backups\` add column \`drill_reason\` text null;`);
    this.addSql(`alter table \`backups\` add column \`drill_requested_at\` datetime null;`);
    this.addSql(`alter table \`backups\` add column \`drill_started_at\` datetime null;`);
    this.addSql(`alter table \`backups\` add column \`drill_finished_at\` datetime null;`);
    this.addSql(`alter table \`backups\` add column \`drill_counts\` text null;`);
    this.addSql(`alter table \`backups\` add column \`drill_checksum_ok\` integer null;`);
    this.addSql(`create index \`backups_drill_status_index\` on \`backups\` (\`drill_status\`);`);

    this.addSql(`alter table \`backup_schedules\` add column \`volume\` text null;`);
    this.addSql(`alter table \`backup_schedules\` add column \`volume_mode\` text null;`);
    this.addSql(`alter table \`backup_schedules\` add column \`drill\` text not null default 'weekly';`);
    this.addSql(`alter table \`backup_schedules\` add column \`last_drill_at\` datetime null;`);

    this.addSql(`alter table \`backup_settings\` add column \`drill\` text not null default 'weekly';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists \`pitr_restores\`;`);
    this.addSql(`drop table if exists \`pitr_settings\`;`);
    this.addSql(`drop table if exists \`service_volumes\`;`);
    this.addSql(`drop table if exists \`wal_segments\`;`);

    this.addSql(`alter table \`backup_schedules\` drop column \`volume\`;`);
    this.addSql(`alter table \`backup_schedules\` drop column \`volume_mode\`;`);
    this.addSql(`alter table \`backup_schedules\` drop column \`drill\`;`);
    this.addSql(`alter table \`backup_schedules\` drop column \`last_drill_at\`;`);

    this.addSql(`alter table \`backup_settings\` drop column \`drill\`;`);

    this.addSql(`drop index \`backups_drill_status_index\`;`);
    this.addSql(`alter table \`backups\` drop column \`kind\`;`);
    this.addSql(`alter table \`backups\` drop column \`volume\`;`);
    this.addSql(`alter table \`backups\` drop column \`volume_mode\`;`);
    this.addSql(`alter table \`backups\` drop column \`wal_start\`;`);
    this.addSql(`alter table \`backups\` drop column \`counts\`;`);
    this.addSql(`alter table \`backups\` drop column \`drill_status\`;`);
    this.addSql(`alter table \`backups\` drop column \`drill_reason\`;`);
    this.addSql(`alter table \`backups\` drop column \`drill_requested_at\`;`);
    this.addSql(`alter table \`backups\` drop column \`drill_started_at\`;`);
    this.addSql(`alter table \`backups\` drop column \`drill_finished_at\`;`);
    this.addSql(`alter table \`backups\` drop column \`drill_counts\`;`);
    this.addSql(`alter table \`backups\` drop column \`drill_checksum_ok\`;`);
  }
}
