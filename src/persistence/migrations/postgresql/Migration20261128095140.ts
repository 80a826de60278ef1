import { Migration } from '@mikro-orm/migrations';

/** A service's replicas and resources (src/domain/service-scale.ts): one replica, no limits, for services that exist. */
export class Migration20261128095140 extends Migration {
  override name = 'Migration20261128095140';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "services" add column "replicas" int not null default 1, add column "cpu_limit_millis" int null, add column "memory_limit_mb" int null, add column "cpu_reservation_millis" int null, add column "memory_reservation_mb" int null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(
      `alter table "services" drop column "replicas", drop column "cpu_limit_millis", drop column "memory_limit_mb", drop column "cpu_reservation_millis", drop column "memory_reservation_mb";`,
    );
  }
}
