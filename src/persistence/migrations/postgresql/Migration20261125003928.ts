import { Migration } from '@mikro-orm/migrations';

/**
 * A service's source is stored, not spelled with the wire's placeholder strings: `services.source`
 * says repository, image or database; an image keeps only container_image; a database's engine and
 * settings move to service_databases, and the database-only columns leave services.
 */
export class Migration20261125003928 extends Migration {
  override name = 'Migration20261125003928';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "service_databases" ("service_id" varchar(32) not null, "engine" varchar(16) not null, "public_enabled" boolean not null, "public_hostname" varchar(253) null, "logical_replication_enabled" boolean not null, primary key ("service_id"));`,
    );
    this.addSql(
      `insert into "service_databases" ("service_id", "engine", "public_enabled", "public_hostname", "logical_replication_enabled") select "id", substr("repo_full_name", 10), "database_public_enabled", "database_public_hostname", "postgres_logical_replication_enabled" from "services" where "repo_url" = 'database';`,
    );

    this.addSql(`alter table "services" add "source" varchar(16) not null default 'repository';`);
    this.addSql(`alter table "services" alter column "source" drop default;`);
    this.addSql(
      `update "services" set "source" = 'image', "repo_full_name" = null, "repo_url" = null where "repo_url" = 'container-image';`,
    );
    this.addSql(`update "services" set "source" = 'database', "repo_full_name" = null, "repo_url" = null where "repo_url" = 'database';`);

    this.addSql(
      `alter table "services" drop column "database_public_enabled", drop column "database_public_hostname", drop column "postgres_logical_replication_enabled";`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(
      `alter table "services" add "database_public_enabled" bool not null default false, add "database_public_hostname" varchar(253) null, add "postgres_logical_replication_enabled" bool not null default false;`,
    );
    this.addSql(
      `alter table "services" alter column "database_public_enabled" drop default, alter column "postgres_logical_replication_enabled" drop default;`,
    );
    this.addSql(
      `update "services" set "repo_full_name" = 'image:' || "container_image", "repo_url" = 'container-image' where "source" = 'image';`,
    );
    this.addSql(
      `update "services" set "repo_full_name" = 'database:' || d."engine", "repo_url" = 'database', "database_public_enabled" = d."public_enabled", "database_public_hostname" = d."public_hostname", "postgres_logical_replication_enabled" = d."logical_replication_enabled" from "service_databases" d where d."service_id" = "services"."id";`,
    );
    this.addSql(`alter table "services" drop column "source";`);
    this.addSql(`drop table if exists "service_databases" cascade;`);
  }
}
