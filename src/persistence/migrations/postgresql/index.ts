import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261121122039 } from './Migration20261121122039.js';
import { Migration20261121141910 } from './Migration20261121141910.js';
import { Migration20261125003928 } from './Migration20261125003928.js';
import { Migration20261126101330 } from './Migration20261126101330.js';
import { Migration20261126101334 } from './Migration20261126101334.js';
import { Migration20261126101753 } from './Migration20261126101753.js';
import { Migration20261126102000 } from './Migration20261126102000.js';
import { Migration20261126103000 } from './Migration20261126103000.js';
import { Migration20261126113000 } from './Migration20261126113000.js';
import { Migration20261127083629 } from './Migration20261127083629.js';
import { Migration20261127090000 } from './Migration20261127090000.js';
import { Migration20261127091000 } from './Migration20261127091000.js';
import { Migration20261128025817 } from './Migration20261128025817.js';
import { Migration20261128035831 } from './Migration20261128035831.js';
import { Migration20261128040537 } from './Migration20261128040537.js';
import { Migration20261128095140 } from './Migration20261128095140.js';
import { Migration20261128120000 } from './Migration20261128120000.js';
import { Migration20261128040741 } from './Migration20261128040741.js';
import { Migration20261129043000 } from './Migration20261129043000.js';
import { Migration20261129050001 } from './Migration20261129050001.js';
import { Migration20261129073000 } from './Migration20261129073000.js';

/** Every migration, oldest first. Listed by hand so they load the same under tsx, vitest and node. */
export const postgresqlMigrations: MigrationObject[] = [
  { name: 'Migration20261121122039', class: Migration20261121122039 },
  { name: 'Migration20261121141910', class: Migration20261121141910 },
  { name: 'Migration20261125003928', class: Migration20261125003928 },
  { name: 'Migration20261126101330', class: Migration20261126101330 },
  { name: 'Migration20261126101334', class: Migration20261126101334 },
  { name: 'Migration20261126101753', class: Migration20261126101753 },
  { name: 'Migration20261126102000', class: Migration20261126102000 },
  { name: 'Migration20261126103000', class: Migration20261126103000 },
  { name: 'Migration20261126113000', class: Migration20261126113000 },
  { name: 'Migration20261127083629', class: Migration20261127083629 },
  { name: 'Migration20261127090000', class: Migration20261127090000 },
  { name: 'Migration20261127091000', class: Migration20261127091000 },
  { name: 'Migration20261128025817', class: Migration20261128025817 },
  { name: 'Migration20261128035831', class: Migration20261128035831 },
  { name: 'Migration20261128040537', class: Migration20261128040537 },
  { name: 'Migration20261128095140', class: Migration20261128095140 },
  { name: 'Migration20261128120000', class: Migration20261128120000 },
  { name: 'Migration20261128040741', class: Migration20261128040741 },
  { name: 'Migration20261129043000', class: Migration20261129043000 },
  { name: 'Migration20261129050001', class: Migration20261129050001 },
  { name: 'Migration20261129073000', class: Migration20261129073000 },
];
