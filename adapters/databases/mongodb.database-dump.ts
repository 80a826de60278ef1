import type { ContainerExec } from './container-exec.js';
import { dumpWith, restoreWith, type DumpFamily } from './dump-family.js';

/**
 * MongoDB's Database Tools in the image: `mongodump --archive` (every database but `local`, as one
 * stream on stdout) and `mongorestore --archive --drop` (each collection of the archive dropped, then
 * restored; collections made after the backup are kept). They log in as the root user of the image's
 * MONGO_INITDB_ROOT_* with the password in a `--config` YAML file (mode 600, removed after), never argv.
 */
export const MongoDump: DumpFamily = {
  format: 'archive',
  async dump(exec, env) {
    const login = await loginOptions(exec, env);
    return dumpWith(exec, ['mongodump', '--archive', ...login.args], { cleanup: login.remove });
  },
  async restore(exec, env, input) {
    const login = await loginOptions(exec, env);
    await restoreWith(exec, ['mongorestore', '--archive', '--drop', '--stopOnError', ...login.args], input, { cleanup: login.remove });
  },
};

/** Where the tools connect (the server in the same container) and as whom. */
async function loginOptions(exec: ContainerExec, env: Record<string, string>): Promise<{ args: string[]; remove(): Promise<void> }> {
  const args = ['--host=127.0.0.1', '--port=27017'];
  const user = env.MONGO_INITDB_ROOT_USERNAME;
  if (!user) return { args, remove: async () => undefined };
  // The tools' YAML: a JSON string is a valid double-quoted YAML scalar.
  const config = await exec.secretFile('.yaml', `password: ${JSON.stringify(env.MONGO_INITDB_ROOT_PASSWORD ?? '')}\n`);
  return {
    args: [...args, `--username=${user}`, '--authenticationDatabase=admin', `--config=${config.path}`],
    remove: config.remove,
  };
}
