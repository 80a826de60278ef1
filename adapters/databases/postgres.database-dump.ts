import { dumpWith, restoreWith, type DumpFamily } from './dump-family.js';

/** `pg_dump --format=custom` / `pg_restore --clean --if-exists` in one transaction; the password in PGPASSWORD. */
export const PostgresDump: DumpFamily = {
  format: 'custom',
  dump: (exec, env) =>
    dumpWith(exec, ['pg_dump', '--format=custom', '--no-password', '-U', user(env), '-d', database(env)], { env: password(env) }),
  restore: (exec, env, input) =>
    restoreWith(
      exec,
      [
        'pg_restore',
        '--clean',
        '--if-exists',
        '--no-owner',
        '--single-transaction',
        '--exit-on-error',
        '--no-password',
        '-U',
        user(env),
        '-d',
        database(env),
      ],
      input,
      { env: password(env) },
    ),
};

const user = (env: Record<string, string>) => env.POSTGRES_USER ?? 'postgres';
const database = (env: Record<string, string>) => env.POSTGRES_DB ?? 'postgres';
const password = (env: Record<string, string>) => ({ PGPASSWORD: env.POSTGRES_PASSWORD ?? '' });
