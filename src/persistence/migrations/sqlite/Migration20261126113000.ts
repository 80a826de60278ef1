import { Migration } from '@mikro-orm/migrations';

/** Requests and 5xx answers per service and minute, from the proxy's access log (0 for the minutes before). */
export class Migration20261126113000 extends Migration {
  override name = 'Migration20261126113000';

  override up(): void | Promise<void> {
    this.addSql(`alter table \`metric_samples\` add column \`requests\` integer not null default 0;`);
    this.addSql(`alter table \`metric_samples\` add column \`errors5xx\` integer not null default 0;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table \`metric_samples\` drop column \`errors5xx\`;`);
    this.addSql(`alter table \`metric_samples\` drop column \`requests\`;`);
  }
}
