import { Migration } from '@mikro-orm/migrations';

/** A service's placement on the cluster (src/domain/service-placement.ts): none for services that exist. */
export class Migration20261129050000 extends Migration {
  override name = 'Migration20261129050000';

  override up(): void | Promise<void> {
    this.addSql(`alter table \`services\` add column \`placement\` json null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table \`services\` drop column \`placement\`;`);
  }
}
