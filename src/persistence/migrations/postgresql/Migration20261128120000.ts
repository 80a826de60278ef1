import { Migration } from '@mikro-orm/migrations';

/**
 * Push to deploy and previews (docs/push-to-deploy.md): project webhooks and their deliveries, polling
 * state, commit statuses to post, previews; the services' trigger fields (autoDeploy on for what is
 * built or pulled, off for databases and storage instances) and the deployments' origin.
 */
export class Migration20261128120000 extends Migration {
  override name = 'Migration20261128120000';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "commit_statuses" ("id" varchar(32) not null, "deployment_id" varchar(32) null, "service_id" varchar(32) not null, "provider" varchar(16) not null, "repository" varchar(512) not null, "repository_id" varchar(64) null, "sha" varchar(64) not null, "ref" varchar(255) null, "context" varchar(255) not null, "fixed_state" varchar(16) null, "description" text null, "target_url" text null, "reported_state" varchar(16) null, "attempts" int not null, "last_error" text null, "next_attempt_at" timestamptz not null, "done" boolean not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "commit_statuses_deployment_id_index" on "commit_statuses" ("deployment_id");`);
    this.addSql(`create index "commit_statuses_service_id_index" on "commit_statuses" ("service_id");`);
    this.addSql(`create index "commit_statuses_done_next_attempt_at_index" on "commit_statuses" ("done", "next_attempt_at");`);

    this.addSql(
      `create table "previews" ("id" varchar(32) not null, "project_id" varchar(32) not null, "number" int not null, "provider" varchar(16) not null, "title" text null, "source_environment_id" varchar(32) not null, "environment_id" varchar(32) null, "services" jsonb not null, "databases" jsonb not null, "head_sha" varchar(64) not null, "head_branch" varchar(255) not null, "head_repository" varchar(512) null, "fetch_url" text null, "fetch_ref" varchar(255) null, "from_fork" boolean not null, "status" varchar(16) not null, "phase" varchar(16) not null, "deployment_ids" jsonb not null, "status_reason" text null, "url" text null, "last_push_at" timestamptz not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "previews_project_id_index" on "previews" ("project_id");`);
    this.addSql(`create index "previews_environment_id_index" on "previews" ("environment_id");`);
    this.addSql(`alter table "previews" add constraint "previews_project_id_number_unique" unique ("project_id", "number");`);

    this.addSql(
      `create table "project_webhooks" ("project_id" varchar(32) not null, "secret_encrypted" text not null, "created_at" timestamptz not null, "rotated_at" timestamptz not null, primary key ("project_id"));`,
    );

    this.addSql(
      `create table "service_polls" ("service_id" varchar(32) not null, "last_seen" varchar(100) null, "last_checked_at" timestamptz null, "next_check_at" timestamptz not null, "failures" int not null, "last_error" text null, primary key ("service_id"));`,
    );
    this.addSql(`create index "service_polls_next_check_at_index" on "service_polls" ("next_check_at");`);

    this.addSql(
      `create table "webhook_deliveries" ("id" varchar(32) not null, "project_id" varchar(32) not null, "provider" varchar(16) not null, "event" varchar(100) not null, "delivery_id" varchar(200) null, "dedupe_key" varchar(300) null, "outcome" varchar(16) not null, "reason" text not null, "http_status" int not null, "deployment_ids" jsonb not null, "preview_ids" jsonb not null, "received_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_dedupe_key_unique" unique ("dedupe_key");`);
    this.addSql(`create index "webhook_deliveries_project_id_received_at_index" on "webhook_deliveries" ("project_id", "received_at");`);

    this.addSql(`alter table "deployments" add "origin" jsonb null;`);

    this.addSql(
      `alter table "services" add "auto_deploy" boolean not null default true, add "watch_paths" jsonb not null default '[]', add "poll_interval_seconds" int null, add "cancel_in_progress" boolean not null default false, add "previews" jsonb null;`,
    );
    this.addSql(`update "services" set "auto_deploy" = false where "source" in ('database', 'storage');`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "commit_statuses" cascade;`);
    this.addSql(`drop table if exists "previews" cascade;`);
    this.addSql(`drop table if exists "project_webhooks" cascade;`);
    this.addSql(`drop table if exists "service_polls" cascade;`);
    this.addSql(`drop table if exists "webhook_deliveries" cascade;`);

    this.addSql(`alter table "deployments" drop column "origin";`);

    this.addSql(
      `alter table "services" drop column "auto_deploy", drop column "watch_paths", drop column "poll_interval_seconds", drop column "cancel_in_progress", drop column "previews";`,
    );
  }
}
