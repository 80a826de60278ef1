import { Migration } from '@mikro-orm/migrations';

export class Migration20261126101753 extends Migration {
  override name = 'Migration20261126101753';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "password_resets" ("id" varchar(32) not null, "user_id" varchar(32) not null, "token_hash" varchar(64) not null, "expires_at" timestamptz not null, "used_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "password_resets_user_id_index" on "password_resets" ("user_id");`);
    this.addSql(`alter table "password_resets" add constraint "password_resets_token_hash_unique" unique ("token_hash");`);

    this.addSql(
      `create table "personal_tokens" ("id" varchar(32) not null, "user_id" varchar(32) not null, "name" varchar(255) not null, "scopes" jsonb not null, "prefix" varchar(24) not null, "token_hash" varchar(64) not null, "expires_at" timestamptz null, "created_at" timestamptz not null, "last_used_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "personal_tokens_user_id_index" on "personal_tokens" ("user_id");`);
    this.addSql(`alter table "personal_tokens" add constraint "personal_tokens_token_hash_unique" unique ("token_hash");`);

    this.addSql(
      `create table "users" ("id" varchar(32) not null, "email" varchar(320) not null, "name" varchar(255) not null, "password_hash" varchar(255) not null, "role" varchar(16) not null, "totp_secret_encrypted" text null, "totp_enabled" boolean not null, "totp_last_step" int null, "recovery_code_hashes" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "users" add constraint "users_email_unique" unique ("email");`);

    this.addSql(
      `create table "user_sessions" ("id" varchar(32) not null, "user_id" varchar(32) not null, "token_hash" varchar(64) not null, "expires_at" timestamptz not null, "created_at" timestamptz not null, "last_used_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "user_sessions_user_id_index" on "user_sessions" ("user_id");`);
    this.addSql(`alter table "user_sessions" add constraint "user_sessions_token_hash_unique" unique ("token_hash");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "password_resets" cascade;`);
    this.addSql(`drop table if exists "personal_tokens" cascade;`);
    this.addSql(`drop table if exists "users" cascade;`);
    this.addSql(`drop table if exists "user_sessions" cascade;`);
  }
}
