import { Migration } from '@mikro-orm/migrations';

export class Migration20261126101330 extends Migration {
  override name = 'Migration20261126101330';

  override up(): void | Promise<void> {
    this.addSql(
      `create table \`backups\` (\`id\` text not null primary key, \`service_id\` text not null, \`engine\` text not null, \`status\` text not null, \`trigger\` text not null, \`storage\` text not null, \`format\` text not null, \`local_path\` text null, \`object_key\` text null, \`size_bytes\` bigint not null, \`checksum\` text not null, \`error\` text null, \`abort_requested\` integer not null, \`created_at\` datetime not null, \`started_at\` datetime null, \`finished_at\` datetime null);`,
    );
    this.addSql(`create index \`backups_status_created_at_index\` on \`backups\` (\`status\`, \`created_at\`);`);
    this.addSql(`create index \`backups_service_id_created_at_index\` on \`backups\` (\`service_id\`, \`created_at\`);`);

    this.addSql(
      `create table \`backup_logs\` (\`id\` integer not null primary key autoincrement, \`backup_id\` text not null, \`line\` text not null, \`stream\` text not null, \`created_at\` datetime not null);`,
    );
    this.addSql(`create index \`backup_logs_backup_id_index\` on \`backup_logs\` (\`backup_id\`);`);

    this.addSql(
      `create table \`backup_settings\` (\`service_id\` text not null primary key, \`storage\` text not null, \`automatic_enabled\` integer not null, \`daily_enabled\` integer not null, \`weekly_enabled\` integer not null, \`monthly_enabled\` integer not null, \`keep_daily\` integer not null, \`keep_weekly\` integer not null, \`keep_monthly\` integer not null, \`created_at\` datetime not null, \`updated_at\` datetime not null);`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists \`backups\`;`);
    this.addSql(`drop table if exists \`backup_logs\`;`);
    this.addSql(`drop table if exists \`backup_settings\`;`);
  }
}
