import { Migration } from '@mikro-orm/migrations';

/**
 * In-place point-in-time restores (`replace: true`): the data volume a database runs on once a restore
 * swapped it onto the volume it filled, and on the restore the volume it ran on before (put back when a
 * restart cuts the swap off).
 */
export class Migration20261129043000 extends Migration {
  override name = 'Migration20261129043000';

  override up(): void | Promise<void> {
    this.addSql(`alter table \`pitr_settings\` add column \`data_volume\` text null;`);
    this.addSql(`alter table \`pitr_restores\` add column \`previous_volume\` text null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table \`pitr_settings\` drop column \`data_volume\`;`);
    this.addSql(`alter table \`pitr_restores\` drop column \`previous_volume\`;`);
  }
}
