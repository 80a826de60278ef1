import { Migration } from '@mikro-orm/migrations';

/**
 * Data safety (issue 35): point-in-time recovery (pitr_settings, wal_segments, pitr_restores), services'
 * named volumes, and on backups their kind (dump, volume, base), the counts a restore must hold and the
 * last restore drill; drills on backup configurations (weekly unless set) and on the managed ones' settings.
 */
export class Migration20261128040741 extends Migration {
  override name = 'Migration20261128040741';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "pitr_restores" ("id" varchar(32) not null, "service_id" varchar(32) not null, "target_service_id" varchar(32) null, "at" timestamptz not null, "replace" boolean not null, "status" varchar(16) not null, "base_backup_id" varchar(32) null, "reached_at" timestamptz null, "error" text null, "abort_requested" boolean not null, "created_at" timestamptz not null, "started_at" timestamptz null, "finished_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "pitr_restores_status_created_at_index" on "pitr_restores" ("status", "created_at");`);
    this.addSql(`create index "pitr_restores_service_id_created_at_index" on "pitr_restores" ("service_id", "created_at");`);

    this.addSql(
      `create table "pitr_settings" ("service_id" varchar(32) not null, "enabled" boolean not null, "storage" varchar(16) not null, "storage_id" varchar(32) null, "retention_days" int not null, "base_schedule" varchar(120) not null, "next_base_at" timestamptz not null, "pending_segments" int not null, "pending_bytes" bigint not null, "oldest_pending_at" timestamptz null, "last_shipped_at" timestamptz null, "last_error" text null, "checked_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("service_id"));`,
    );

    this.addSql(
      `create table "service_volumes" ("id" varchar(32) not null, "service_id" varchar(32) not null, "name" varchar(64) not null, "mount_path" varchar(1024) not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "service_volumes_service_id_index" on "service_volumes" ("service_id");`);
    this.addSql(`alter table "service_volumes" add constraint "service_volumes_service_id_name_unique" unique ("service_id", "name");`);

    this.addSql(
      `create table "wal_segments" ("id" varchar(32) not null, "service_id" varchar(32) not null, "name" varchar(64) not null, "timeline" int not null, "wal_bytes" bigint not null, "size_bytes" bigint not null, "checksum" varchar(80) not null, "completed_at" timestamptz not null, "stored_at" timestamptz not null, "local_path" varchar(1024) null, "object_key" varchar(1024) null, "storage_id" varchar(32) null, primary key ("id"));`,
    );
    this.addSql(`create index "wal_segments_service_id_completed_at_index" on "wal_segments" ("service_id", "completed_at");`);
    this.addSql(`alter table "wal_segments" add constraint "wal_segments_service_id_name_unique" unique ("service_id", "name");`);

    this.addSql(
      `alter table "backups" add "kind" varchar(16) not null default 'dump', add "volume" varchar(64) null, add "volume_mode" varchar(16) null, add "wal_start" varchar(64) null, add "counts" text null, add "drill_status" varchar(16) null, add "drill_reason" text null, add "drill_requested_at" timestamptz null, add "drill_started_at" timestamptz null, add "drill_finished_at" timestamptz null, add "drill_counts" text null, add "drill_checksum_ok" boolean null;`,
    );
    this.addSql(`create index "backups_drill_status_index" on "backups" ("drill_status");`);

    this.addSql(
      `alter table "backup_schedules" add "volume" varchar(64) null, add "volume_mode" varchar(16) null, add "drill" varchar(16) not null default 'weekly', add "last_drill_at" timestamptz null;`,
    );

    this.addSql(`alter table "backup_settings" add "drill" varchar(16) not null default 'weekly';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "pitr_restores" cascade;`);
    this.addSql(`drop table if exists "pitr_settings" cascade;`);
    this.addSql(`drop table if exists "service_volumes" cascade;`);
    this.addSql(`drop table if exists "wal_segments" cascade;`);

    this.addSql(
      `alter table "backup_schedules" drop column "volume", drop column "volume_mode", drop column "drill", drop column "last_drill_at";`,
    );

    this.addSql(`alter table "backup_settings" drop column "drill";`);

    this.addSql(`drop index "backups_drill_status_index";`);
    this.addSql(
      `alter table "backups" drop column "kind", drop column "volume", drop column "volume_mode", drop column "wal_start", drop column "counts", drop column "drill_status", drop column "drill_reason", drop column "drill_requested_at", drop column "drill_started_at", drop column "drill_finished_at", drop column "drill_counts", drop column "drill_checksum_ok";`,
    );
  }
}
