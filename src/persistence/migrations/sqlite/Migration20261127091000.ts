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
      `create table \`environments\` (\`id\` text not null primary key, \`project_id\` text not null, \`name\` text not null, \`created_at\` datetime not null, \`updated_at\` datetime not null);`,
    );
    this.addSql(`create index \`environments_project_id_index\` on \`environments\` (\`project_id\`);`);
    this.addSql(`create unique index \`environments_project_id_name_unique\` on \`environments\` (\`project_id\`, \`name\`);`);
    this.addSql(
      `insert into \`environments\` (\`id\`, \`project_id\`, \`name\`, \`created_at\`, \`updated_at\`) select \`id\`, \`id\`, 'production', \`created_at\`, \`created_at\` from \`projects\`;`,
    );

    // SQLite adds a NOT NULL column only with a default: the table is rebuilt as the schema generator
    // does it, each service's environment being its project's first (same id as the project).
    this.addSql(
      `create table \`services__temp_alter\` (\`id\` text not null primary key, \`project_id\` text not null, \`environment_id\` text not null, \`name\` text not null, \`slug\` text not null, \`source\` text not null, \`repo_full_name\` text null, \`repo_url\` text null, \`container_image\` text null, \`branch\` text not null, \`root_dir\` text null, \`git_token_encrypted\` text null, \`install_command\` text null, \`build_command\` text null, \`start_command\` text null, \`static_output\` text null, \`build_method\` text not null, \`dockerfile_path\` text null, \`detected_build_method\` text null, \`runtime_mode\` text not null, \`internal_port\` integer not null, \`host_port\` integer not null, \`status\` text not null, \`reachable\` integer not null, \`preferred_domain\` text null, \`framework\` text null, \`last_deployed_at\` datetime null, \`created_at\` datetime not null, \`updated_at\` datetime not null);`,
    );
    this.addSql(
      `insert into \`services__temp_alter\` select \`id\`, \`project_id\`, \`project_id\`, \`name\`, \`slug\`, \`source\`, \`repo_full_name\`, \`repo_url\`, \`container_image\`, \`branch\`, \`root_dir\`, \`git_token_encrypted\`, \`install_command\`, \`build_command\`, \`start_command\`, \`static_output\`, \`build_method\`, \`dockerfile_path\`, \`detected_build_method\`, \`runtime_mode\`, \`internal_port\`, \`host_port\`, \`status\`, \`reachable\`, \`preferred_domain\`, \`framework\`, \`last_deployed_at\`, \`created_at\`, \`updated_at\` from \`services\`;`,
    );
    this.addSql(`drop table \`services\`;`);
    this.addSql(`alter table \`services__temp_alter\` rename to \`services\`;`);
    this.addSql(`create index \`services_project_id_index\` on \`services\` (\`project_id\`);`);
    this.addSql(`create index \`services_environment_id_index\` on \`services\` (\`environment_id\`);`);
    this.addSql(`create unique index \`services_host_port_unique\` on \`services\` (\`host_port\`);`);
    this.addSql(`create unique index \`services_environment_id_slug_unique\` on \`services\` (\`environment_id\`, \`slug\`);`);
  }

  override down(): void | Promise<void> {
    // Only a project's first environment can go back: the others' services would share slugs.
    this.addSql(`delete from \`services\` where \`environment_id\` <> \`project_id\`;`);
    this.addSql(`drop index \`services_environment_id_slug_unique\`;`);
    this.addSql(`drop index \`services_environment_id_index\`;`);
    this.addSql(`alter table \`services\` drop column \`environment_id\`;`);
    this.addSql(`create unique index \`services_project_id_slug_unique\` on \`services\` (\`project_id\`, \`slug\`);`);
    this.addSql(`drop table if exists \`environments\`;`);
  }
}
