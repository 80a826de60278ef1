import { Migration } from '@mikro-orm/migrations';

/** Rollbacks: a deployment may name the deployment whose image it runs again. */
export class Migration20261126102000 extends Migration {
  override name = 'Migration20261126102000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "deployments" add column "rollback_of" varchar(32) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "deployments" drop column "rollback_of";`);
  }
}
