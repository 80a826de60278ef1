import { Migration } from '@mikro-orm/migrations';

/**
 * Environments: every project gets `production`, with the project's own id (so its network and
 * generated hostnames stay the ones running containers use), and every service moves into it.
 * Service slugs become unique per environment instead of per project.
 */
export class Migration20261127091000 extends Migration {
  override name = 'Migration20261127091000';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "environments" ("id" varchar(32) not null, "project_id" varchar(32) not null, "name" varchar(32) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "environments_project_id_index" on "environments" ("project_id");`);
    this.addSql(`alter table "environments" add constraint "environments_project_id_name_unique" unique ("project_id", "name");`);
    this.addSql(
      `insert into "environments" ("id", "project_id", "name", "created_at", "updated_at") select "id", "id", 'production', "created_at", "created_at" from "projects";`,
    );

    this.addSql(`alter table "services" add "environment_id" varchar(32) null;`);
    this.addSql(`update "services" set "environment_id" = "project_id";`);
    this.addSql(`alter table "services" alter column "environment_id" set not null;`);
    this.addSql(`create index "services_environment_id_index" on "services" ("environment_id");`);
    this.addSql(`alter table "services" drop constraint "services_project_id_slug_unique";`);
    this.addSql(`alter table "services" add constraint "services_environment_id_slug_unique" unique ("environment_id", "slug");`);
  }

  override down(): void | Promise<void> {
    // Only a project's first environment can go back: the others' services would share slugs.
    this.addSql(`delete from "services" where "environment_id" <> "project_id";`);
    this.addSql(`alter table "services" drop constraint "services_environment_id_slug_unique";`);
    this.addSql(`alter table "services" drop column "environment_id";`);
    this.addSql(`alter table "services" add constraint "services_project_id_slug_unique" unique ("project_id", "slug");`);
    this.addSql(`drop table if exists "environments" cascade;`);
  }
}
