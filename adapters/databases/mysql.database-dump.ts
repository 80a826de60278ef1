import type { ContainerExec } from './container-exec.js';
import { afterDump, type DumpFamily } from './dump-family.js';

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
    try {
      const cmd = [
        'mysqldump',
        `--defaults-extra-file=${options.path}`,
        '--single-transaction',
        '--routines',
        '--triggers',
        '--events',
        '--hex-blob',
        '--default-character-set=utf8mb4',
        database(env),
      ];
      exec.log(`Running ${cmd.join(' ')} in the database's container`);
      return afterDump(await exec.stream(cmd).then((run) => ({ stream: run.stdout, done: run.done })), options.remove);
    } catch (error) {
      await options.remove();
      throw error;
    }
  },
  async restore(exec, env, input) {
    const options = await optionFile(exec, env);
    try {
      const cmd = ['mysql', `--defaults-extra-file=${options.path}`, '--default-character-set=utf8mb4', database(env)];
      exec.log(`Running ${cmd.join(' ')} in the database's container`);
      await exec.run(cmd, { stdin: input });
    } finally {
      await options.remove();
    }
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
