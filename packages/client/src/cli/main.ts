import { parseArgs } from 'node:util';
import { SlipwayError } from '../errors.js';
import * as commands from './commands.js';
import { CliError, EXIT, exitCodeOf, type Context } from './commands.js';
import { createOutput } from './output.js';

const HELP = `slipway: the Slipway API from a terminal or CI

  slipway login --url <url> --token <key>   store the server and API key (in the user's config dir, mode 600)
  slipway logout
  slipway projects
  slipway services <project>
  slipway service create <project> <name> (--image <ref> | --repo <url>) [--port N] [--replicas N] [<placement>]
  slipway service update <service> [--replicas N] [<placement> | --anywhere]
                                            <placement>: [--must k=v]... [--must-not k=v]... [--role manager|worker|any],
                                            where its replicas may run on the cluster (replaces the placement whole)
  slipway deploy <service> [--follow]       --follow streams the build log; exits 1 unless the deployment succeeds
  slipway logs <service> [--follow] [--tail N]
  slipway env list <service>
  slipway env set <service> KEY=VALUE... [--secret]
  slipway env unset <service> KEY...
  slipway domains list|add|rm <service> [<hostname>]
  slipway db query <service> "<sql>"
  slipway pitr show|enable|disable|restore <service> [<storage> [<days>] | <ISO time>]
  slipway rollback <deployment> [--follow]
  slipway audit [--project <project>] [--actor <id>] [--operation <name>] [--since <iso>] [--limit N]

<service> is an id, <project>/<service>, or a service's slug or name when one project has it.
--json prints JSON (streams: one JSON object per line). SLIPWAY_URL and SLIPWAY_TOKEN override the login.
Exit codes: 0 ok, 1 deployment failed, 2 usage, 3 unauthorized/forbidden, 4 not found, 5 other API error,
6 server unreachable, 7 not supported by this server.`;

const COMMANDS: Record<string, (ctx: Context, args: string[]) => Promise<number>> = {
  login: commands.login,
  logout: commands.logout,
  projects: commands.projects,
  services: commands.services,
  service: commands.service,
  deploy: commands.deploy,
  logs: commands.logs,
  env: commands.env,
  domains: commands.domains,
  db: commands.db,
  pitr: commands.pitr,
  rollback: commands.rollback,
  audit: commands.audit,
};

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n\n${HELP}\n`);
    return EXIT.usage;
  }
  const { values, positionals } = parsed;
  const [name, ...args] = positionals;
  if (values.help || !name) {
    process.stdout.write(`${HELP}\n`);
    return name || values.help ? EXIT.ok : EXIT.usage;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`error: unknown command "${name}"\n\n${HELP}\n`);
    return EXIT.usage;
  }
  const out = createOutput(values.json ?? false);
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const code = await command(
      {
        out,
        signal: controller.signal,
        env,
        flags: {
          follow: values.follow ?? false,
          secret: values.secret ?? false,
          url: values.url,
          token: values.token,
          tail: values.tail,
          project: values.project,
          actor: values.actor,
          operation: values.operation,
          since: values.since,
          limit: values.limit,
          image: values.image,
          repo: values.repo,
          port: values.port,
          replicas: values.replicas,
          must: values.must,
          mustNot: values['must-not'],
          role: values.role,
          anywhere: values.anywhere ?? false,
        },
      },
      args,
    );
    // Interrupted (Ctrl-C on `logs --follow`): the shell's convention, whatever the command made of it.
    return controller.signal.aborted ? 130 : code;
  } catch (error) {
    if (controller.signal.aborted) return 130;
    return report(error, out.json);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: 'boolean' },
      follow: { type: 'boolean', short: 'f' },
      secret: { type: 'boolean' },
      url: { type: 'string' },
      token: { type: 'string' },
      tail: { type: 'string' },
      project: { type: 'string' },
      actor: { type: 'string' },
      operation: { type: 'string' },
      since: { type: 'string' },
      limit: { type: 'string' },
      image: { type: 'string' },
      repo: { type: 'string' },
      port: { type: 'string' },
      replicas: { type: 'string' },
      must: { type: 'string', multiple: true },
      'must-not': { type: 'string', multiple: true },
      role: { type: 'string' },
      anywhere: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

/** The API's message as it said it (and the field, for a validation error), on stderr; JSON too with --json. */
function report(error: unknown, json: boolean): number {
  if (error instanceof CliError) {
    process.stderr.write(`error: ${error.message}\n`);
    if (json) process.stdout.write(`${JSON.stringify({ error: 'cli_error', message: error.message })}\n`);
    return error.exitCode;
  }
  if (error instanceof SlipwayError) {
    process.stderr.write(`error: ${error.message}${error.status ? ` (${error.code}, HTTP ${error.status})` : ` (${error.code})`}\n`);
    if (json) process.stdout.write(`${JSON.stringify({ error: error.code, message: error.message, details: error.details })}\n`);
    return exitCodeOf(error);
  }
  process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  return EXIT.api;
}

process.exitCode = await main(process.argv.slice(2));
