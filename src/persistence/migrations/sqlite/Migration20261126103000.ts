import { Migration } from '@mikro-orm/migrations';

/** Service metrics: one row per service and minute (see MetricsSampler). */
export class Migration20261126103000 extends Migration {
  override name = 'Migration20261126103000';

  override up(): void | Promise<void> {
    this.addSql(
      `create table \`metric_samples\` (\`id\` integer not null primary key autoincrement, \`service_id\` text not null, \`at\` datetime not null, \`cpu_percent\` double not null, \`memory_used_bytes\` bigint not null, \`memory_limit_bytes\` bigint not null, \`net_rx_bytes\` bigint not null, \`net_tx_bytes\` bigint not null, \`block_read_bytes\` bigint not null, \`block_write_bytes\` bigint not null, \`restarts\` integer not null);`,
    );
    this.addSql(`create index \`metric_samples_service_id_at_index\` on \`metric_samples\` (\`service_id\`, \`at\`);`);
    this.addSql(`create index \`metric_samples_at_index\` on \`metric_samples\` (\`at\`);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists \`metric_samples\`;`);
  }
}
