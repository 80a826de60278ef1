import { Migration } from '@mikro-orm/migrations';

/** Events (the outbox), notification channels, rules, deliveries and attempts, the audit log, sign-in addresses. */
export class Migration20261128035829 extends Migration {
  override name = 'Migration20261128035829';

  override up(): void | Promise<void> {
    this.addSql(
      `create table \`audit_entries\` (\`id\` integer not null primary key autoincrement, \`at\` datetime not null, \`actor_kind\` text not null, \`actor_id\` text null, \`user_id\` text null, \`operation\` text not null, \`door\` text not null, \`target_ids\` json not null, \`project_id\` text null, \`client_address\` text null, \`outcome\` text not null);`,
    );
    this.addSql(`create index \`audit_entries_at_index\` on \`audit_entries\` (\`at\`);`);
    this.addSql(`create index \`audit_entries_project_id_id_index\` on \`audit_entries\` (\`project_id\`, \`id\`);`);
    this.addSql(`create index \`audit_entries_actor_id_id_index\` on \`audit_entries\` (\`actor_id\`, \`id\`);`);
    this.addSql(`create index \`audit_entries_operation_id_index\` on \`audit_entries\` (\`operation\`, \`id\`);`);

    this.addSql(
      `create table \`events\` (\`seq\` integer not null primary key autoincrement, \`id\` text not null, \`type\` text not null, \`project_id\` text null, \`payload\` text not null, \`dispatched\` integer not null, \`occurred_at\` datetime not null);`,
    );
    this.addSql(`create unique index \`events_id_unique\` on \`events\` (\`id\`);`);
    this.addSql(`create index \`events_project_id_index\` on \`events\` (\`project_id\`);`);
    this.addSql(`create index \`events_dispatched_seq_index\` on \`events\` (\`dispatched\`, \`seq\`);`);
    this.addSql(`create index \`events_occurred_at_index\` on \`events\` (\`occurred_at\`);`);

    this.addSql(
      `create table \`notification_attempts\` (\`id\` integer not null primary key autoincrement, \`delivery_id\` text not null, \`channel_id\` text not null, \`attempt\` integer not null, \`at\` datetime not null, \`ok\` integer not null, \`status_code\` integer null, \`latency_ms\` integer not null, \`error\` text null);`,
    );
    this.addSql(`create index \`notification_attempts_delivery_id_index\` on \`notification_attempts\` (\`delivery_id\`);`);

    this.addSql(
      `create table \`notification_channels\` (\`id\` text not null primary key, \`type\` text not null, \`name\` text not null, \`config_encrypted\` text not null, \`secret_encrypted\` text null, \`consecutive_failures\` integer not null, \`last_attempt_at\` datetime null, \`last_error\` text null, \`created_at\` datetime not null, \`updated_at\` datetime not null);`,
    );

    this.addSql(
      `create table \`notification_deliveries\` (\`id\` text not null primary key, \`channel_id\` text not null, \`event_id\` text null, \`event_type\` text not null, \`status\` text not null, \`attempts\` integer not null, \`next_attempt_at\` datetime null, \`lease_until\` datetime null, \`last_error\` text null, \`created_at\` datetime not null, \`finished_at\` datetime null);`,
    );
    this.addSql(
      `create index \`notification_deliveries_status_next_attempt_at_index\` on \`notification_deliveries\` (\`status\`, \`next_attempt_at\`);`,
    );
    this.addSql(
      `create index \`notification_deliveries_channel_id_created_at_index\` on \`notification_deliveries\` (\`channel_id\`, \`created_at\`);`,
    );

    this.addSql(
      `create table \`notification_rules\` (\`id\` text not null primary key, \`project_id\` text null, \`events\` json not null, \`channel_ids\` json not null, \`created_at\` datetime not null);`,
    );
    this.addSql(`create index \`notification_rules_project_id_index\` on \`notification_rules\` (\`project_id\`);`);

    this.addSql(
      `create table \`signin_addresses\` (\`id\` text not null primary key, \`user_id\` text not null, \`address\` text not null, \`first_seen_at\` datetime not null, \`last_seen_at\` datetime not null);`,
    );
    this.addSql(`create index \`signin_addresses_user_id_index\` on \`signin_addresses\` (\`user_id\`);`);
    this.addSql(`create unique index \`signin_addresses_user_id_address_unique\` on \`signin_addresses\` (\`user_id\`, \`address\`);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists \`audit_entries\`;`);
    this.addSql(`drop table if exists \`events\`;`);
    this.addSql(`drop table if exists \`notification_attempts\`;`);
    this.addSql(`drop table if exists \`notification_channels\`;`);
    this.addSql(`drop table if exists \`notification_deliveries\`;`);
    this.addSql(`drop table if exists \`notification_rules\`;`);
    this.addSql(`drop table if exists \`signin_addresses\`;`);
  }
}
