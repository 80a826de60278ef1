import { Migration } from '@mikro-orm/migrations';

/**
 * The cluster (issue 31): servers, where stateful services are pinned, the registry's images; and the
 * control planes sharing one database: their heartbeats, the claims of running jobs, leases.
 */
export class Migration20261128040536 extends Migration {
  override name = 'Migration20261128040536';

  override up(): void | Promise<void> {
    this.addSql(
      `create table \`control_planes\` (\`id\` text not null primary key, \`hostname\` text not null, \`pid\` integer not null, \`started_at\` datetime not null, \`heartbeat_at\` datetime not null);`,
    );

    this.addSql(
      `create table \`job_claims\` (\`job_id\` text not null primary key, \`kind\` text not null, \`owner\` text not null, \`claimed_at\` datetime not null);`,
    );
    this.addSql(`create index \`job_claims_owner_index\` on \`job_claims\` (\`owner\`);`);

    this.addSql(
      `create table \`leases\` (\`name\` text not null primary key, \`holder\` text not null, \`expires_at\` datetime not null);`,
    );

    this.addSql(
      `create table \`registry_images\` (\`deployment_id\` text not null primary key, \`service_id\` text not null, \`repository\` text not null, \`digest\` text not null, \`pushed_at\` datetime not null);`,
    );
    this.addSql(`create index \`registry_images_service_id_index\` on \`registry_images\` (\`service_id\`);`);

    this.addSql(
      `create table \`servers\` (\`id\` text not null primary key, \`name\` text not null, \`role\` text not null, \`local\` integer not null, \`address\` text null, \`hostname\` text null, \`swarm_node_id\` text null, \`labels\` json not null, \`availability\` text not null, \`state\` text not null, \`state_changed_at\` datetime not null, \`engine_version\` text null, \`join_token_hash\` text null, \`join_expires_at\` datetime null, \`join_used_at\` datetime null, \`joined_at\` datetime null, \`created_at\` datetime not null, \`updated_at\` datetime not null);`,
    );
    this.addSql(`create unique index \`servers_name_unique\` on \`servers\` (\`name\`);`);
    this.addSql(`create index \`servers_swarm_node_id_index\` on \`servers\` (\`swarm_node_id\`);`);
    this.addSql(`create unique index \`servers_join_token_hash_unique\` on \`servers\` (\`join_token_hash\`);`);

    this.addSql(
      `create table \`service_placements\` (\`service_id\` text not null primary key, \`server_id\` text not null, \`updated_at\` datetime not null);`,
    );
    this.addSql(`create index \`service_placements_server_id_index\` on \`service_placements\` (\`server_id\`);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists \`control_planes\`;`);
    this.addSql(`drop table if exists \`job_claims\`;`);
    this.addSql(`drop table if exists \`leases\`;`);
    this.addSql(`drop table if exists \`registry_images\`;`);
    this.addSql(`drop table if exists \`servers\`;`);
    this.addSql(`drop table if exists \`service_placements\`;`);
  }
}
