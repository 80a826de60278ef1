import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261121122039 } from './Migration20261121122039.js';
import { Migration20261121141909 } from './Migration20261121141909.js';
import { Migration20261125003926 } from './Migration20261125003926.js';
import { Migration20261126101330 } from './Migration20261126101330.js';
import { Migration20261126101334 } from './Migration20261126101334.js';
import { Migration20261126101753 } from './Migration20261126101753.js';
import { Migration20261126102000 } from './Migration20261126102000.js';
import { Migration20261126103000 } from './Migration20261126103000.js';
import { Migration20261126113000 } from './Migration20261126113000.js';
import { Migration20261127083628 } from './Migration20261127083628.js';
import { Migration20261127090000 } from './Migration20261127090000.js';
import { Migration20261127091000 } from './Migration20261127091000.js';
import { Migration20261128025815 } from './Migration20261128025815.js';
import { Migration20261128035829 } from './Migration20261128035829.js';
import { Migration20261128040536 } from './Migration20261128040536.js';
import { Migration20261128095139 } from './Migration20261128095139.js';
import { Migration20261128120000 } from './Migration20261128120000.js';
import { Migration20261128040740 } from './Migration20261128040740.js';
import { Migration20261129043000 } from './Migration20261129043000.js';
import { Migration20261129050000 } from './Migration20261129050000.js';
import { Migration20261129073000 } from './Migration20261129073000.js';

/** Every migration, oldest first. Listed by hand so they load the same under tsx, vitest and node. */
export const sqliteMigrations: MigrationObject[] = [
  { name: 'Migration20261121122039', class: Migration20261121122039 },
  { name: 'Migration20261121141909', class: Migration20261121141909 },
  { name: 'Migration20261125003926', class: Migration20261125003926 },
  { name: 'Migration20261126101330', class: Migration20261126101330 },
  { name: 'Migration20261126101334', class: Migration20261126101334 },
  { name: 'Migration20261126101753', class: Migration20261126101753 },
  { name: 'Migration20261126102000', class: Migration20261126102000 },
  { name: 'Migration20261126103000', class: Migration20261126103000 },
  { name: 'Migration20261126113000', class: Migration20261126113000 },
  { name: 'Migration20261127083628', class: Migration20261127083628 },
  { name: 'Migration20261127090000', class: Migration20261127090000 },
  { name: 'Migration20261127091000', class: Migration20261127091000 },
  { name: 'Migration20261128025815', class: Migration20261128025815 },
  { name: 'Migration20261128035829', class: Migration20261128035829 },
  { name: 'Migration20261128040536', class: Migration20261128040536 },
  { name: 'Migration20261128095139', class: Migration20261128095139 },
  { name: 'Migration20261128120000', class: Migration20261128120000 },
  { name: 'Migration20261128040740', class: Migration20261128040740 },
  { name: 'Migration20261129043000', class: Migration20261129043000 },
  { name: 'Migration20261129050000', class: Migration20261129050000 },
  { name: 'Migration20261129073000', class: Migration20261129073000 },
];
