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
      `create table \`commit_statuses\` (\`id\` text not null primary key, \`deployment_id\` text null, \`service_id\` text not null, \`provider\` text not null, \`repository\` text not null, \`repository_id\` text null, \`sha\` text not null, \`ref\` text null, \`context\` text not null, \`fixed_state\` text null, \`description\` text null, \`target_url\` text null, \`reported_state\` text null, \`attempts\` integer not null, \`last_error\` text null, \`next_attempt_at\` datetime not null, \`done\` integer not null, \`created_at\` datetime not null);`,
    );
    this.addSql(`create index \`commit_statuses_deployment_id_index\` on \`commit_statuses\` (\`deployment_id\`);`);
    this.addSql(`create index \`commit_statuses_service_id_index\` on \`commit_statuses\` (\`service_id\`);`);
    this.addSql(`create index \`commit_statuses_done_next_attempt_at_index\` on \`commit_statuses\` (\`done\`, \`next_attempt_at\`);`);

    this.addSql(
      `create table \`previews\` (\`id\` text not null primary key, \`project_id\` text not null, \`number\` integer not null, \`provider\` text not null, \`title\` text null, \`source_environment_id\` text not null, \`environment_id\` text null, \`services\` json not null, \`databases\` json not null, \`head_sha\` text not null, \`head_branch\` text not null, \`head_repository\` text null, \`fetch_url\` text null, \`fetch_ref\` text null, \`from_fork\` integer not null, \`status\` text not null, \`phase\` text not null, \`deployment_ids\` json not null, \`status_reason\` text null, \`url\` text null, \`last_push_at\` datetime not null, \`created_at\` datetime not null, \`updated_at\` datetime not null);`,
    );
    this.addSql(`create index \`previews_project_id_index\` on \`previews\` (\`project_id\`);`);
    this.addSql(`create index \`previews_environment_id_index\` on \`previews\` (\`environment_id\`);`);
    this.addSql(`create unique index \`previews_project_id_number_unique\` on \`previews\` (\`project_id\`, \`number\`);`);

    this.addSql(
      `create table \`project_webhooks\` (\`project_id\` text not null primary key, \`secret_encrypted\` text not null, \`created_at\` datetime not null, \`rotated_at\` datetime not null);`,
    );

    this.addSql(
      `create table \`service_polls\` (\`service_id\` text not null primary key, \`last_seen\` text null, \`last_checked_at\` datetime null, \`next_check_at\` datetime not null, \`failures\` integer not null, \`last_error\` text null);`,
    );
    this.addSql(`create index \`service_polls_next_check_at_index\` on \`service_polls\` (\`next_check_at\`);`);

    this.addSql(
      `create table \`webhook_deliveries\` (\`id\` text not null primary key, \`project_id\` text not null, \`provider\` text not null, \`event\` text not null, \`delivery_id\` text null, \`dedupe_key\` text null, \`outcome\` text not null, \`reason\` text not null, \`http_status\` integer not null, \`deployment_ids\` json not null, \`preview_ids\` json not null, \`received_at\` datetime not null);`,
    );
    this.addSql(`create unique index \`webhook_deliveries_dedupe_key_unique\` on \`webhook_deliveries\` (\`dedupe_key\`);`);
    this.addSql(
      `create index \`webhook_deliveries_project_id_received_at_index\` on \`webhook_deliveries\` (\`project_id\`, \`received_at\`);`,
    );

    this.addSql(`alter table \`deployments\` add column \`origin\` json null;`);

    this.addSql(`alter table \`services\` add column \`auto_deploy\` integer not null default true;`);
    this.addSql(`alter table \`services\` add column \`watch_paths\` json not null default '[]';`);
    this.addSql(`alter table \`services\` add column \`poll_interval_seconds\` integer null;`);
    this.addSql(`alter table \`services\` add column \`cancel_in_progress\` integer not null default false;`);
    this.addSql(`alter table \`services\` add column \`previews\` json null;`);
    this.addSql(`update \`services\` set \`auto_deploy\` = false where \`source\` in ('database', 'storage');`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists \`commit_statuses\`;`);
    this.addSql(`drop table if exists \`previews\`;`);
    this.addSql(`drop table if exists \`project_webhooks\`;`);
    this.addSql(`drop table if exists \`service_polls\`;`);
    this.addSql(`drop table if exists \`webhook_deliveries\`;`);

    this.addSql(`alter table \`deployments\` drop column \`origin\`;`);

    this.addSql(`alter table \`services\` drop column \`auto_deploy\`;`);
    this.addSql(`alter table \`services\` drop column \`watch_paths\`;`);
    this.addSql(`alter table \`services\` drop column \`poll_interval_seconds\`;`);
    this.addSql(`alter table \`services\` drop column \`cancel_in_progress\`;`);
    this.addSql(`alter table \`services\` drop column \`previews\`;`);
  }
}
