import { parseArgs } from 'node:util';
import { DomainError } from '../../src/index.js';
import { ConfigError, loadConfig } from '../composition/config.js';
import { composePlatform } from '../composition/root.js';

const USAGE = `usage: npm run cli -- keys create --name <name> --access read|write [--project <id>]...
       npm run cli -- keys list
       npm run cli -- keys delete <id>
       npm run cli -- users list
       npm run cli -- users reset-2fa <email>     (turns two-factor off, ends the user's sessions)
Works on the database of this host (DATA_DIR or DATABASE_URL), with or without the server running.`;

/** Operator commands on the server's host: whoever can run them already owns the data. */
async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      access: { type: 'string' },
      project: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [group, command, ...rest] = positionals;
  if (values.help || (group !== 'keys' && group !== 'users') || !command) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const config = loadConfig();
  // The platform without anything that runs: the database and its use cases.
  const platform = await composePlatform(config, { operatorOnly: true });
  try {
    const services = platform.useCases;
    const operator = { keyId: 'cli', access: 'write' as const, projectIds: null };
    /** The operator's writes go in the audit log too: who is `system:operator`, the door `cli`. */
    const audited = async <T>(operation: string, targetIds: string[], work: () => Promise<T>): Promise<T> => {
      let outcome = 'success';
      const made: string[] = [];
      try {
        const result = await work();
        made.push(...services.audit.createdIds(result));
        return result;
      } catch (error) {
        outcome = error instanceof DomainError ? error.code : 'internal_error';
        throw error;
      } finally {
        await services.audit.record({ who: { system: 'operator' }, operation, door: 'cli', targetIds: [...targetIds, ...made], outcome });
      }
    };
    if (group === 'users') {
      if (command === 'list') {
        for (const user of await services.accounts.listUsers(operator))
          console.log([user.id, user.email, user.role, user.twoFactorEnabled ? '2fa' : '-', user.name].join('\t'));
        return 0;
      }
      if (command === 'reset-2fa' && rest[0]) {
        const email = rest[0];
        const user = await audited('cli.users.reset-2fa', [], () => services.accounts.resetTwoFactor(email));
        console.error(`two-factor authentication is off for ${user.email}; their sessions ended`);
        return 0;
      }
      console.log(USAGE);
      return 2;
    }
    switch (command) {
      case 'create': {
        if (!values.name || (values.access !== 'read' && values.access !== 'write')) {
          console.error('keys create needs --name and --access read|write');
          return 2;
        }
        const input = { name: values.name, access: values.access as 'read' | 'write', projectIds: values.project ?? null };
        const { apiKey, token } = await audited('cli.keys.create', [], () => services.apiKeys.create(operator, input));
        console.error(
          `created API key ${apiKey.id} (${apiKey.access}, ${apiKey.projectIds ? `projects ${apiKey.projectIds.join(', ')}` : 'all projects'}); the token is shown once:`,
        );
        console.log(token);
        return 0;
      }
      case 'list':
        for (const key of await services.apiKeys.list(operator)) {
          console.log([key.id, key.prefix, key.access, key.projectIds?.join(',') ?? '*', key.name, key.lastUsedAt ?? 'never'].join('\t'));
        }
        return 0;
      case 'delete':
        if (!rest[0]) {
          console.error('keys delete needs an id');
          return 2;
        }
        await audited('cli.keys.delete', [rest[0]], () => services.apiKeys.delete(operator, rest[0]!));
        console.error(`deleted API key ${rest[0]}`);
        return 0;
      default:
        console.log(USAGE);
        return 2;
    }
  } finally {
    await platform.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof ConfigError || error instanceof Error ? error.message : String(error));
    process.exit(1);
  },
);
