import { Migration } from '@mikro-orm/migrations';

export class Migration20261121141910 extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "settings" ("key" varchar(64) not null, "value" text not null, "updated_at" timestamptz not null, constraint "settings_pkey" primary key ("key"));`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "settings" cascade;`);
  }
}
