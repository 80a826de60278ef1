import { Migration } from '@mikro-orm/migrations';

export class Migration20261121122039 extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "api_keys" ("id" varchar(32) not null, "name" varchar(255) not null, "access" varchar(8) not null, "project_ids" jsonb null, "prefix" varchar(16) not null, "token_hash" varchar(64) not null, "created_at" timestamptz not null, "last_used_at" timestamptz null, constraint "api_keys_pkey" primary key ("id"));`,
    );
    this.addSql(`alter table "api_keys" add constraint "api_keys_token_hash_unique" unique ("token_hash");`);

    this.addSql(
      `create table "deployments" ("id" varchar(32) not null, "service_id" varchar(32) not null, "commit_sha" varchar(64) null, "status" varchar(16) not null, "trigger" varchar(16) not null, "image_tag" varchar(255) null, "container_name" varchar(255) null, "abort_requested" boolean not null, "started_at" timestamptz null, "finished_at" timestamptz null, "created_at" timestamptz not null, constraint "deployments_pkey" primary key ("id"));`,
    );
    this.addSql(`create index "deployments_service_id_index" on "deployments" ("service_id");`);
    this.addSql(`create index "deployments_status_created_at_index" on "deployments" ("status", "created_at");`);

    this.addSql(
      `create table "deployment_logs" ("id" serial primary key, "deployment_id" varchar(32) not null, "line" text not null, "stream" varchar(8) not null, "created_at" timestamptz not null);`,
    );
    this.addSql(`create index "deployment_logs_deployment_id_index" on "deployment_logs" ("deployment_id");`);

    this.addSql(
      `create table "domains" ("id" varchar(32) not null, "service_id" varchar(32) not null, "hostname" varchar(253) not null, "status" varchar(16) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "domains_pkey" primary key ("id"));`,
    );
    this.addSql(`create index "domains_service_id_index" on "domains" ("service_id");`);
    this.addSql(`alter table "domains" add constraint "domains_hostname_unique" unique ("hostname");`);

    this.addSql(
      `create table "env_vars" ("id" varchar(32) not null, "service_id" varchar(32) not null, "key" varchar(255) not null, "value_encrypted" text not null, "secret" boolean not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "env_vars_pkey" primary key ("id"));`,
    );
    this.addSql(`create index "env_vars_service_id_index" on "env_vars" ("service_id");`);
    this.addSql(`alter table "env_vars" add constraint "env_vars_service_id_key_unique" unique ("service_id", "key");`);

    this.addSql(
      `create table "projects" ("id" varchar(32) not null, "name" varchar(255) not null, "slug" varchar(64) not null, "description" text not null, "status" varchar(16) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "projects_pkey" primary key ("id"));`,
    );
    this.addSql(`alter table "projects" add constraint "projects_slug_unique" unique ("slug");`);

    this.addSql(
      `create table "services" ("id" varchar(32) not null, "project_id" varchar(32) not null, "name" varchar(255) not null, "slug" varchar(64) not null, "repo_full_name" varchar(512) null, "repo_url" text null, "container_image" varchar(512) null, "branch" varchar(255) not null, "root_dir" varchar(1024) null, "git_token_encrypted" text null, "install_command" text null, "build_command" text null, "start_command" text null, "static_output" varchar(1024) null, "build_method" varchar(16) not null, "dockerfile_path" varchar(1024) null, "detected_build_method" varchar(16) null, "runtime_mode" varchar(16) not null, "internal_port" int not null, "host_port" int not null, "database_public_enabled" boolean not null, "database_public_hostname" varchar(253) null, "postgres_logical_replication_enabled" boolean not null, "status" varchar(16) not null, "reachable" boolean not null, "preferred_domain" varchar(253) null, "framework" varchar(64) null, "last_deployed_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "services_pkey" primary key ("id"));`,
    );
    this.addSql(`create index "services_project_id_index" on "services" ("project_id");`);
    this.addSql(`alter table "services" add constraint "services_host_port_unique" unique ("host_port");`);
    this.addSql(`alter table "services" add constraint "services_project_id_slug_unique" unique ("project_id", "slug");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "api_keys" cascade;`);

    this.addSql(`drop table if exists "deployments" cascade;`);

    this.addSql(`drop table if exists "deployment_logs" cascade;`);

    this.addSql(`drop table if exists "domains" cascade;`);

    this.addSql(`drop table if exists "env_vars" cascade;`);

    this.addSql(`drop table if exists "projects" cascade;`);

    this.addSql(`drop table if exists "services" cascade;`);
  }
}
