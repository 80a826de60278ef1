import { Migration } from '@mikro-orm/migrations';

/**
 * Databases and storage instances that exist ran on the host that runs the platform (issue 31): each is
 * recorded as held by the local server, where that server's row exists already. An install whose row
 * is made later (its first start) gets them from ServerService.ensureLocal, which places the same way.
 */
export class Migration20261129073000 extends Migration {
  override name = 'Migration20261129073000';

  override up(): void | Promise<void> {
    this.addSql(
      `insert into "service_placements" ("service_id", "server_id", "updated_at") select s."id", v."id", s."updated_at" from "services" s join "servers" v on v."local" = true where s."source" in ('database', 'storage') and not exists (select 1 from "service_placements" p where p."service_id" = s."id");`,
    );
  }

  override down(): void | Promise<void> {
    // The rows say what the default says (the local server): nothing is lost by keeping them.
  }
}
