import type { ContainerExec } from './container-exec.js';
import { dumpWith, restoreWith, type DumpFamily } from './dump-family.js';

/**
 * `mysqldump --single-transaction` / the `mysql` client, as root on the service's database. The
 * password reaches both through an option file (`--defaults-extra-file`, mode 600, removed after):
 * MYSQL_PWD is deprecated since MySQL 8.0, and an option file is read the same way by MySQL's and
 * MariaDB's tools.
 */
export const MysqlDump: DumpFamily = {
  format: 'sql',
  async dump(exec, env) {
    const options = await optionFile(exec, env);
    return dumpWith(
      exec,
      [
        'mysqldump',
        `--defaults-extra-file=${options.path}`,
        '--single-transaction',
        '--routines',
        '--triggers',
        '--events',
        '--hex-blob',
        '--default-character-set=utf8mb4',
        database(env),
      ],
      { cleanup: options.remove },
    );
  },
  async restore(exec, env, input) {
    const options = await optionFile(exec, env);
    const cmd = ['mysql', `--defaults-extra-file=${options.path}`, '--default-character-set=utf8mb4', database(env)];
    await restoreWith(exec, cmd, input, { cleanup: options.remove });
  },
};

function database(env: Record<string, string>): string {
  return env.MYSQL_DATABASE ?? 'mysql';
}

function optionFile(exec: ContainerExec, env: Record<string, string>) {
  return exec.secretFile('.cnf', `[client]\nuser=root\npassword=${optionValue(env.MYSQL_ROOT_PASSWORD ?? '')}\n`);
}

/** A value of a MySQL option file: double-quoted, with the escapes its reader undoes (\\ \" \n \r \t). */
export function optionValue(value: string): string {
  const escaped = value.replace(/[\\"\n\r\t]/g, (c) => ({ '\\': '\\\\', '"': '\\"', '\n': '\\n', '\r': '\\r', '\t': '\\t' })[c]!);
  return `"${escaped}"`;
}
