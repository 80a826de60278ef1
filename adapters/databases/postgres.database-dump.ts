import type { DumpFamily } from './dump-family.js';

/** `pg_dump --format=custom` / `pg_restore --clean --if-exists` in one transaction; the password in PGPASSWORD. */
export const PostgresDump: DumpFamily = {
  format: 'custom',
  async dump(exec, env) {
    const cmd = ['pg_dump', '--format=custom', '--no-password', '-U', env.POSTGRES_USER ?? 'postgres', '-d', env.POSTGRES_DB ?? 'postgres'];
    exec.log(`Running ${cmd.join(' ')} in the database's container`);
    const run = await exec.stream(cmd, { env: { PGPASSWORD: env.POSTGRES_PASSWORD ?? '' } });
    return { stream: run.stdout, done: run.done };
  },
  async restore(exec, env, input) {
    const cmd = [
      'pg_restore',
      '--clean',
      '--if-exists',
      '--no-owner',
      '--single-transaction',
      '--exit-on-error',
      '--no-password',
      '-U',
      env.POSTGRES_USER ?? 'postgres',
      '-d',
      env.POSTGRES_DB ?? 'postgres',
    ];
    exec.log(`Running ${cmd.join(' ')} in the database's container`);
    await exec.run(cmd, { env: { PGPASSWORD: env.POSTGRES_PASSWORD ?? '' }, stdin: input });
  },
};
