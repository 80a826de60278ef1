import { Migration } from '@mikro-orm/migrations';

/** Storage instances (their bucket, key pair and exposure), and which of them holds each backup and each database's backups. */
export class Migration20261127083629 extends Migration {
  override name = 'Migration20261127083629';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "service_storages" ("service_id" varchar(32) not null, "bucket" varchar(63) not null, "access_key_id" varchar(128) not null, "secret_access_key_encrypted" text not null, "public_enabled" boolean not null, primary key ("service_id"));`,
    );

    this.addSql(`alter table "backups" add "storage_id" varchar(32) null;`);

    this.addSql(`alter table "backup_settings" add "storage_id" varchar(32) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "service_storages" cascade;`);

    this.addSql(`alter table "backup_settings" drop column "storage_id";`);

    this.addSql(`alter table "backups" drop column "storage_id";`);
  }
}
