import { Migration } from '@mikro-orm/migrations';

export class Migration20261126101334 extends Migration {
  override name = 'Migration20261126101334';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "database_imports" ("id" varchar(32) not null, "service_id" varchar(32) not null, "engine" varchar(16) not null, "source" varchar(16) not null, "source_label" varchar(512) not null, "status" varchar(16) not null, "error" text null, "created_at" timestamptz not null, "started_at" timestamptz null, "finished_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "database_imports_service_id_index" on "database_imports" ("service_id");`);
    this.addSql(`create index "database_imports_status_index" on "database_imports" ("status");`);

    this.addSql(
      `create table "database_import_logs" ("id" serial primary key, "import_id" varchar(32) not null, "line" text not null, "stream" varchar(8) not null, "created_at" timestamptz not null);`,
    );
    this.addSql(`create index "database_import_logs_import_id_index" on "database_import_logs" ("import_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "database_imports" cascade;`);
    this.addSql(`drop table if exists "database_import_logs" cascade;`);
  }
}
