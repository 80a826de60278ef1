import { Migration } from '@mikro-orm/migrations';

export class Migration20261121122039 extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table \`api_keys\` (\`id\` text not null, \`name\` text not null, \`access\` text not null, \`project_ids\` json null, \`prefix\` text not null, \`token_hash\` text not null, \`created_at\` datetime not null, \`last_used_at\` datetime null, primary key (\`id\`));`,
    );
    this.addSql(`create unique index \`api_keys_token_hash_unique\` on \`api_keys\` (\`token_hash\`);`);

    this.addSql(
      `create table \`deployments\` (\`id\` text not null, \`service_id\` text not null, \`commit_sha\` text null, \`status\` text not null, \`trigger\` text not null, \`image_tag\` text null, \`container_name\` text null, \`abort_requested\` integer not null, \`started_at\` datetime null, \`finished_at\` datetime null, \`created_at\` datetime not null, primary key (\`id\`));`,
    );
    this.addSql(`create index \`deployments_service_id_index\` on \`deployments\` (\`service_id\`);`);
    this.addSql(`create index \`deployments_status_created_at_index\` on \`deployments\` (\`status\`, \`created_at\`);`);

    this.addSql(
      `create table \`deployment_logs\` (\`id\` integer not null primary key autoincrement, \`deployment_id\` text not null, \`line\` text not null, \`stream\` text not null, \`created_at\` datetime not null);`,
    );
    this.addSql(`create index \`deployment_logs_deployment_id_index\` on \`deployment_logs\` (\`deployment_id\`);`);

    this.addSql(
      `create table \`domains\` (\`id\` text not null, \`service_id\` text not null, \`hostname\` text not null, \`status\` text not null, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`,
    );
    this.addSql(`create index \`domains_service_id_index\` on \`domains\` (\`service_id\`);`);
    this.addSql(`create unique index \`domains_hostname_unique\` on \`domains\` (\`hostname\`);`);

    this.addSql(
      `create table \`env_vars\` (\`id\` text not null, \`service_id\` text not null, \`key\` text not null, \`value_encrypted\` text not null, \`secret\` integer not null, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`,
    );
    this.addSql(`create index \`env_vars_service_id_index\` on \`env_vars\` (\`service_id\`);`);
    this.addSql(`create unique index \`env_vars_service_id_key_unique\` on \`env_vars\` (\`service_id\`, \`key\`);`);

    this.addSql(
      `create table \`projects\` (\`id\` text not null, \`name\` text not null, \`slug\` text not null, \`description\` text not null, \`status\` text not null, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`,
    );
    this.addSql(`create unique index \`projects_slug_unique\` on \`projects\` (\`slug\`);`);

    this.addSql(
      `create table \`services\` (\`id\` text not null, \`project_id\` text not null, \`name\` text not null, \`slug\` text not null, \`repo_full_name\` text null, \`repo_url\` text null, \`container_image\` text null, \`branch\` text not null, \`root_dir\` text null, \`git_token_encrypted\` text null, \`install_command\` text null, \`build_command\` text null, \`start_command\` text null, \`static_output\` text null, \`build_method\` text not null, \`dockerfile_path\` text null, \`detected_build_method\` text null, \`runtime_mode\` text not null, \`internal_port\` integer not null, \`host_port\` integer not null, \`database_public_enabled\` integer not null, \`database_public_hostname\` text null, \`postgres_logical_replication_enabled\` integer not null, \`status\` text not null, \`reachable\` integer not null, \`preferred_domain\` text null, \`framework\` text null, \`last_deployed_at\` datetime null, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`,
    );
    this.addSql(`create index \`services_project_id_index\` on \`services\` (\`project_id\`);`);
    this.addSql(`create unique index \`services_host_port_unique\` on \`services\` (\`host_port\`);`);
    this.addSql(`create unique index \`services_project_id_slug_unique\` on \`services\` (\`project_id\`, \`slug\`);`);
  }
}
