import { Migration } from '@mikro-orm/migrations';

/**
 * The cluster (issue 31): servers, where stateful services are pinned, the registry's images; and the
 * control planes sharing one database: their heartbeats, the claims of running jobs, leases.
 */
export class Migration20261128040537 extends Migration {
  override name = 'Migration20261128040537';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "control_planes" ("id" varchar(32) not null, "hostname" varchar(255) not null, "pid" int not null, "started_at" timestamptz not null, "heartbeat_at" timestamptz not null, primary key ("id"));`,
    );

    this.addSql(
      `create table "job_claims" ("job_id" varchar(32) not null, "kind" varchar(32) not null, "owner" varchar(32) not null, "claimed_at" timestamptz not null, primary key ("job_id"));`,
    );
    this.addSql(`create index "job_claims_owner_index" on "job_claims" ("owner");`);

    this.addSql(
      `create table "leases" ("name" varchar(32) not null, "holder" varchar(32) not null, "expires_at" timestamptz not null, primary key ("name"));`,
    );

    this.addSql(
      `create table "registry_images" ("deployment_id" varchar(32) not null, "service_id" varchar(32) not null, "repository" varchar(255) not null, "digest" varchar(80) not null, "pushed_at" timestamptz not null, primary key ("deployment_id"));`,
    );
    this.addSql(`create index "registry_images_service_id_index" on "registry_images" ("service_id");`);

    this.addSql(
      `create table "servers" ("id" varchar(32) not null, "name" varchar(64) not null, "role" varchar(16) not null, "local" boolean not null, "address" varchar(64) null, "hostname" varchar(255) null, "swarm_node_id" varchar(64) null, "labels" jsonb not null, "availability" varchar(16) not null, "state" varchar(16) not null, "state_changed_at" timestamptz not null, "engine_version" varchar(64) null, "join_token_hash" varchar(64) null, "join_expires_at" timestamptz null, "join_used_at" timestamptz null, "joined_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "servers" add constraint "servers_name_unique" unique ("name");`);
    this.addSql(`create index "servers_swarm_node_id_index" on "servers" ("swarm_node_id");`);
    this.addSql(`alter table "servers" add constraint "servers_join_token_hash_unique" unique ("join_token_hash");`);

    this.addSql(
      `create table "service_placements" ("service_id" varchar(32) not null, "server_id" varchar(32) not null, "updated_at" timestamptz not null, primary key ("service_id"));`,
    );
    this.addSql(`create index "service_placements_server_id_index" on "service_placements" ("server_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "control_planes" cascade;`);
    this.addSql(`drop table if exists "job_claims" cascade;`);
    this.addSql(`drop table if exists "leases" cascade;`);
    this.addSql(`drop table if exists "registry_images" cascade;`);
    this.addSql(`drop table if exists "servers" cascade;`);
    this.addSql(`drop table if exists "service_placements" cascade;`);
  }
}
