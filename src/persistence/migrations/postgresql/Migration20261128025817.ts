import { Migration } from '@mikro-orm/migrations';

/**
 * The authentication endpoints' rate counters and the accounts' sign-in backoff, moved from each
 * process's memory to the database: every platform process against one database shares them.
 */
export class Migration20261128025817 extends Migration {
  override name = 'Migration20261128025817';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "auth_rate_hits" ("counter_key" varchar(64) not null, "window_start" bigint not null, "hits" int not null, primary key ("counter_key", "window_start"));`,
    );
    this.addSql(`create index "auth_rate_hits_window_start_index" on "auth_rate_hits" ("window_start");`);

    this.addSql(
      `create table "signin_backoffs" ("account_key" varchar(64) not null, "failures" int not null, "until_ms" bigint not null, "last_failure_ms" bigint not null, primary key ("account_key"));`,
    );
    this.addSql(`create index "signin_backoffs_last_failure_ms_index" on "signin_backoffs" ("last_failure_ms");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "auth_rate_hits" cascade;`);
    this.addSql(`drop table if exists "signin_backoffs" cascade;`);
  }
}
