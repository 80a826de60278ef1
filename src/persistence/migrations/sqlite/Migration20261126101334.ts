import { Migration } from '@mikro-orm/migrations';

export class Migration20261126101334 extends Migration {
  override name = 'Migration20261126101334';

  override up(): void | Promise<void> {
    this.addSql(
      `create table \`database_imports\` (\`id\` text not null primary key, \`service_id\` text not null, \`engine\` text not null, \`source\` text not null, \`source_label\` text not null, \`status\` text not null, \`error\` text null, \`created_at\` datetime not null, \`started_at\` datetime null, \`finished_at\` datetime null);`,
    );
    this.addSql(`create index \`database_imports_service_id_index\` on \`database_imports\` (\`service_id\`);`);
    this.addSql(`create index \`database_imports_status_index\` on \`database_imports\` (\`status\`);`);

    this.addSql(
      `create table \`database_import_logs\` (\`id\` integer not null primary key autoincrement, \`import_id\` text not null, \`line\` text not null, \`stream\` text not null, \`created_at\` datetime not null);`,
    );
    this.addSql(`create index \`database_import_logs_import_id_index\` on \`database_import_logs\` (\`import_id\`);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists \`database_imports\`;`);
    this.addSql(`drop table if exists \`database_import_logs\`;`);
  }
}
