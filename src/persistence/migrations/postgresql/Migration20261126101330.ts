import { Migration } from '@mikro-orm/migrations';

export class Migration20261126101330 extends Migration {
  override name = 'Migration20261126101330';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "backups" ("id" varchar(32) not null, "service_id" varchar(32) not null, "engine" varchar(16) not null, "status" varchar(16) not null, "trigger" varchar(16) not null, "storage" varchar(16) not null, "format" varchar(16) not null, "local_path" varchar(1024) null, "object_key" varchar(1024) null, "size_bytes" bigint not null, "checksum" varchar(80) not null, "error" text null, "abort_requested" boolean not null, "created_at" timestamptz not null, "started_at" timestamptz null, "finished_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "backups_status_created_at_index" on "backups" ("status", "created_at");`);
    this.addSql(`create index "backups_service_id_created_at_index" on "backups" ("service_id", "created_at");`);

    this.addSql(
      `create table "backup_logs" ("id" serial primary key, "backup_id" varchar(32) not null, "line" text not null, "stream" varchar(8) not null, "created_at" timestamptz not null);`,
    );
    this.addSql(`create index "backup_logs_backup_id_index" on "backup_logs" ("backup_id");`);

    this.addSql(
      `create table "backup_settings" ("service_id" varchar(32) not null, "storage" varchar(16) not null, "automatic_enabled" boolean not null, "daily_enabled" boolean not null, "weekly_enabled" boolean not null, "monthly_enabled" boolean not null, "keep_daily" int not null, "keep_weekly" int not null, "keep_monthly" int not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("service_id"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "backups" cascade;`);
    this.addSql(`drop table if exists "backup_logs" cascade;`);
    this.addSql(`drop table if exists "backup_settings" cascade;`);
  }
}
