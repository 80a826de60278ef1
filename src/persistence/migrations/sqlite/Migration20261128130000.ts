import { Migration } from '@mikro-orm/migrations';

/** Leases among the platform processes on one database: the event loops run in the holder of `events` only. */
export class Migration20261128130000 extends Migration {
  override name = 'Migration20261128130000';

  override up(): void | Promise<void> {
    this.addSql(`create table \`leases\` (\`name\` text not null primary key, \`holder\` text not null, \`expires_ms\` bigint not null);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists \`leases\`;`);
  }
}
