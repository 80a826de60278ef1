import { Migration } from '@mikro-orm/migrations';

export class Migration20261126101753 extends Migration {
  override name = 'Migration20261126101753';

  override up(): void | Promise<void> {
    this.addSql(
      `create table \`password_resets\` (\`id\` text not null primary key, \`user_id\` text not null, \`token_hash\` text not null, \`expires_at\` datetime not null, \`used_at\` datetime null, \`created_at\` datetime not null);`,
    );
    this.addSql(`create index \`password_resets_user_id_index\` on \`password_resets\` (\`user_id\`);`);
    this.addSql(`create unique index \`password_resets_token_hash_unique\` on \`password_resets\` (\`token_hash\`);`);

    this.addSql(
      `create table \`personal_tokens\` (\`id\` text not null primary key, \`user_id\` text not null, \`name\` text not null, \`scopes\` json not null, \`prefix\` text not null, \`token_hash\` text not null, \`expires_at\` datetime null, \`created_at\` datetime not null, \`last_used_at\` datetime null);`,
    );
    this.addSql(`create index \`personal_tokens_user_id_index\` on \`personal_tokens\` (\`user_id\`);`);
    this.addSql(`create unique index \`personal_tokens_token_hash_unique\` on \`personal_tokens\` (\`token_hash\`);`);

    this.addSql(
      `create table \`users\` (\`id\` text not null primary key, \`email\` text not null, \`name\` text not null, \`password_hash\` text not null, \`role\` text not null, \`totp_secret_encrypted\` text null, \`totp_enabled\` integer not null, \`totp_last_step\` integer null, \`recovery_code_hashes\` json not null, \`created_at\` datetime not null, \`updated_at\` datetime not null);`,
    );
    this.addSql(`create unique index \`users_email_unique\` on \`users\` (\`email\`);`);

    this.addSql(
      `create table \`user_sessions\` (\`id\` text not null primary key, \`user_id\` text not null, \`token_hash\` text not null, \`expires_at\` datetime not null, \`created_at\` datetime not null, \`last_used_at\` datetime not null);`,
    );
    this.addSql(`create index \`user_sessions_user_id_index\` on \`user_sessions\` (\`user_id\`);`);
    this.addSql(`create unique index \`user_sessions_token_hash_unique\` on \`user_sessions\` (\`token_hash\`);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists \`password_resets\`;`);
    this.addSql(`drop table if exists \`personal_tokens\`;`);
    this.addSql(`drop table if exists \`users\`;`);
    this.addSql(`drop table if exists \`user_sessions\`;`);
  }
}
