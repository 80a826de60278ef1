import { createInterface } from 'node:readline';
import { FakeDump, MemoryFiles } from './backups.js';
import { createHarness } from './harness.js';

/*
 * A second control plane in a process of its own, on the database named in argv (a SQLite directory
 * or a PostgreSQL URL): it runs a backup scheduler pass each time stdin says `tick <ISO time>`, with
 * its clock at that time, and answers `done`. SQLite's driver is synchronous, so two control planes
 * on one file can only wait for each other's locks from two processes, as they would in production.
 */
const [target] = process.argv.slice(2);
if (!target) throw new Error('usage: second-control-plane.ts <sqlite dir | postgres url>');
let now = new Date(0);
const h = await createHarness({
  ...(/^postgres/.test(target) ? { databaseUrl: target } : { dataDir: target }),
  clock: { now: () => new Date(now) },
  backups: { dump: new FakeDump(), files: new MemoryFiles() },
});
process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const [command, at] = line.split(' ');
  if (command !== 'tick' || !at) continue;
  now = new Date(at);
  await h.services.backupScheduler.tick();
  process.stdout.write('done\n');
}
await h.close();
