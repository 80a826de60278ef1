import { Migration } from '@mikro-orm/migrations';

/** A service's replicas and resources (src/domain/service-scale.ts): one replica, no limits, for services that exist. */
export class Migration20261128095139 extends Migration {
  override name = 'Migration20261128095139';

  override up(): void | Promise<void> {
    this.addSql(`alter table \`services\` add column \`replicas\` integer not null default 1;`);
    this.addSql(`alter table \`services\` add column \`cpu_limit_millis\` integer null;`);
    this.addSql(`alter table \`services\` add column \`memory_limit_mb\` integer null;`);
    this.addSql(`alter table \`services\` add column \`cpu_reservation_millis\` integer null;`);
    this.addSql(`alter table \`services\` add column \`memory_reservation_mb\` integer null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table \`services\` drop column \`replicas\`;`);
    this.addSql(`alter table \`services\` drop column \`cpu_limit_millis\`;`);
    this.addSql(`alter table \`services\` drop column \`memory_limit_mb\`;`);
    this.addSql(`alter table \`services\` drop column \`cpu_reservation_millis\`;`);
    this.addSql(`alter table \`services\` drop column \`memory_reservation_mb\`;`);
  }
}
