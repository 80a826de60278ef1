import { Migration } from '@mikro-orm/migrations';

export class Migration20261121141909 extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table \`settings\` (\`key\` text not null, \`value\` text not null, \`updated_at\` datetime not null, primary key (\`key\`));`,
    );
  }
}
