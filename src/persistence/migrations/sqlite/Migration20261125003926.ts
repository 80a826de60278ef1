import { Migration } from '@mikro-orm/migrations';

/**
 * A service's source is stored, not spelled with the wire's placeholder strings: `services.source`
 * says repository, image or database; an image keeps only container_image; a database's engine and
 * settings move to service_databases, and the database-only columns leave services.
 */
export class Migration20261125003926 extends Migration {
  override name = 'Migration20261125003926';

  override up(): void | Promise<void> {
    this.addSql(
      `create table \`service_databases\` (\`service_id\` text not null primary key, \`engine\` text not null, \`public_enabled\` integer not null, \`public_hostname\` text null, \`logical_replication_enabled\` integer not null);`,
    );
    this.addSql(
      `insert into \`service_databases\` (\`service_id\`, \`engine\`, \`public_enabled\`, \`public_hostname\`, \`logical_replication_enabled\`) select \`id\`, substr(\`repo_full_name\`, 10), \`database_public_enabled\`, \`database_public_hostname\`, \`postgres_logical_replication_enabled\` from \`services\` where \`repo_url\` = 'database';`,
    );

    // SQLite adds a NOT NULL column only with a default, and drops one only by rebuilding: the table is
    // rebuilt as the schema generator does it, each row's source read from the old placeholder strings.
    this.addSql(
      `create table \`services__temp_alter\` (\`id\` text not null primary key, \`project_id\` text not null, \`name\` text not null, \`slug\` text not null, \`source\` text not null, \`repo_full_name\` text null, \`repo_url\` text null, \`container_image\` text null, \`branch\` text not null, \`root_dir\` text null, \`git_token_encrypted\` text null, \`install_command\` text null, \`build_command\` text null, \`start_command\` text null, \`static_output\` text null, \`build_method\` text not null, \`dockerfile_path\` text null, \`detected_build_method\` text null, \`runtime_mode\` text not null, \`internal_port\` integer not null, \`host_port\` integer not null, \`status\` text not null, \`reachable\` integer not null, \`preferred_domain\` text null, \`framework\` text null, \`last_deployed_at\` datetime null, \`created_at\` datetime not null, \`updated_at\` datetime not null);`,
    );
    this.addSql(
      `insert into \`services__temp_alter\` select \`id\`, \`project_id\`, \`name\`, \`slug\`, case \`repo_url\` when 'container-image' then 'image' when 'database' then 'database' else 'repository' end, case when \`repo_url\` in ('container-image', 'database') then null else \`repo_full_name\` end, case when \`repo_url\` in ('container-image', 'database') then null else \`repo_url\` end, \`container_image\`, \`branch\`, \`root_dir\`, \`git_token_encrypted\`, \`install_command\`, \`build_command\`, \`start_command\`, \`static_output\`, \`build_method\`, \`dockerfile_path\`, \`detected_build_method\`, \`runtime_mode\`, \`internal_port\`, \`host_port\`, \`status\`, \`reachable\`, \`preferred_domain\`, \`framework\`, \`last_deployed_at\`, \`created_at\`, \`updated_at\` from \`services\`;`,
    );
    this.addSql(`drop table \`services\`;`);
    this.addSql(`alter table \`services__temp_alter\` rename to \`services\`;`);
    this.addSql(`create index \`services_project_id_index\` on \`services\` (\`project_id\`);`);
    this.addSql(`create unique index \`services_host_port_unique\` on \`services\` (\`host_port\`);`);
    this.addSql(`create unique index \`services_project_id_slug_unique\` on \`services\` (\`project_id\`, \`slug\`);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table \`services\` add column \`database_public_enabled\` integer not null default 0;`);
    this.addSql(`alter table \`services\` add column \`database_public_hostname\` text null;`);
    this.addSql(`alter table \`services\` add column \`postgres_logical_replication_enabled\` integer not null default 0;`);
    this.addSql(
      `update \`services\` set \`repo_full_name\` = 'image:' || \`container_image\`, \`repo_url\` = 'container-image' where \`source\` = 'image';`,
    );
    this.addSql(
      `update \`services\` set \`repo_full_name\` = 'database:' || d.\`engine\`, \`repo_url\` = 'database', \`database_public_enabled\` = d.\`public_enabled\`, \`database_public_hostname\` = d.\`public_hostname\`, \`postgres_logical_replication_enabled\` = d.\`logical_replication_enabled\` from \`service_databases\` d where d.\`service_id\` = \`services\`.\`id\`;`,
    );
    this.addSql(`alter table \`services\` drop column \`source\`;`);
    this.addSql(`drop table if exists \`service_databases\`;`);
  }
}
