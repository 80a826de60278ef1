import { Migration } from '@mikro-orm/migrations';

/** Events (the outbox), notification channels, rules, deliveries and attempts, the audit log, sign-in addresses. */
export class Migration20261128035831 extends Migration {
  override name = 'Migration20261128035831';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "audit_entries" ("id" serial primary key, "at" timestamptz not null, "actor_kind" varchar(16) not null, "actor_id" varchar(64) null, "user_id" varchar(32) null, "operation" varchar(128) not null, "door" varchar(16) not null, "target_ids" jsonb not null, "project_id" varchar(32) null, "client_address" varchar(64) null, "outcome" varchar(32) not null);`,
    );
    this.addSql(`create index "audit_entries_at_index" on "audit_entries" ("at");`);
    this.addSql(`create index "audit_entries_project_id_id_index" on "audit_entries" ("project_id", "id");`);
    this.addSql(`create index "audit_entries_actor_id_id_index" on "audit_entries" ("actor_id", "id");`);
    this.addSql(`create index "audit_entries_operation_id_index" on "audit_entries" ("operation", "id");`);

    this.addSql(
      `create table "events" ("seq" serial primary key, "id" varchar(32) not null, "type" varchar(64) not null, "project_id" varchar(32) null, "payload" text not null, "dispatched" boolean not null, "occurred_at" timestamptz not null);`,
    );
    this.addSql(`alter table "events" add constraint "events_id_unique" unique ("id");`);
    this.addSql(`create index "events_project_id_index" on "events" ("project_id");`);
    this.addSql(`create index "events_dispatched_seq_index" on "events" ("dispatched", "seq");`);
    this.addSql(`create index "events_occurred_at_index" on "events" ("occurred_at");`);

    this.addSql(
      `create table "notification_attempts" ("id" serial primary key, "delivery_id" varchar(32) not null, "channel_id" varchar(32) not null, "attempt" int not null, "at" timestamptz not null, "ok" boolean not null, "status_code" int null, "latency_ms" int not null, "error" text null);`,
    );
    this.addSql(`create index "notification_attempts_delivery_id_index" on "notification_attempts" ("delivery_id");`);

    this.addSql(
      `create table "notification_channels" ("id" varchar(32) not null, "type" varchar(16) not null, "name" varchar(255) not null, "config_encrypted" text not null, "secret_encrypted" text null, "consecutive_failures" int not null, "last_attempt_at" timestamptz null, "last_error" text null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );

    this.addSql(
      `create table "notification_deliveries" ("id" varchar(32) not null, "channel_id" varchar(32) not null, "event_id" varchar(32) null, "event_type" varchar(64) not null, "status" varchar(16) not null, "attempts" int not null, "next_attempt_at" timestamptz null, "lease_until" timestamptz null, "last_error" text null, "created_at" timestamptz not null, "finished_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `create index "notification_deliveries_status_next_attempt_at_index" on "notification_deliveries" ("status", "next_attempt_at");`,
    );
    this.addSql(
      `create index "notification_deliveries_channel_id_created_at_index" on "notification_deliveries" ("channel_id", "created_at");`,
    );

    this.addSql(
      `create table "notification_rules" ("id" varchar(32) not null, "project_id" varchar(32) null, "events" jsonb not null, "channel_ids" jsonb not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "notification_rules_project_id_index" on "notification_rules" ("project_id");`);

    this.addSql(
      `create table "signin_addresses" ("id" varchar(32) not null, "user_id" varchar(32) not null, "address" varchar(64) not null, "first_seen_at" timestamptz not null, "last_seen_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "signin_addresses_user_id_index" on "signin_addresses" ("user_id");`);
    this.addSql(`alter table "signin_addresses" add constraint "signin_addresses_user_id_address_unique" unique ("user_id", "address");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "audit_entries" cascade;`);
    this.addSql(`drop table if exists "events" cascade;`);
    this.addSql(`drop table if exists "notification_attempts" cascade;`);
    this.addSql(`drop table if exists "notification_channels" cascade;`);
    this.addSql(`drop table if exists "notification_deliveries" cascade;`);
    this.addSql(`drop table if exists "notification_rules" cascade;`);
    this.addSql(`drop table if exists "signin_addresses" cascade;`);
  }
}
