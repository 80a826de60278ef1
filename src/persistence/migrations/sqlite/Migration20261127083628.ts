import { Migration } from '@mikro-orm/migrations';

/** Storage instances (their bucket, key pair and exposure), and which of them holds each backup and each database's backups. */
export class Migration20261127083628 extends Migration {
  override name = 'Migration20261127083628';

  override up(): void | Promise<void> {
    this.addSql(
      `create table \`service_storages\` (\`service_id\` text not null primary key, \`bucket\` text not null, \`access_key_id\` text not null, \`secret_access_key_encrypted\` text not null, \`public_enabled\` integer not null);`,
    );

    this.addSql(`alter table \`backups\` add column \`storage_id\` text null;`);

    this.addSql(`alter table \`backup_settings\` add column \`storage_id\` text null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists \`service_storages\`;`);

    this.addSql(`alter table \`backup_settings\` drop column \`storage_id\`;`);

    this.addSql(`alter table \`backups\` drop column \`storage_id\`;`);
  }
}
