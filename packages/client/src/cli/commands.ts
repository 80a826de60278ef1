import {
  createClient,
  listAllProjects,
  type Deployment,
  type DeploymentLogLine,
  type Project,
  type Service,
  type SlipwayClient,
} from '../index.js';
import { SlipwayError } from '../errors.js';
import { credentials, removeConfig, writeConfig } from './config.js';
import { table, type Output } from './output.js';

/** Where a service's replicas may run (the API's ServicePlacement). */
type ServicePlacement = { must?: Record<string, string>; mustNot?: Record<string, string>; role?: 'manager' | 'worker' | null };

/** Exit codes: distinct per kind of failure, so a script can tell them apart. */
export const EXIT = {
  ok: 0,
  /** What was waited for failed: the deployment (or rollback) did not succeed. */
  failed: 1,
  usage: 2,
  /** No key, a wrong key, or a key without the access the call needs. */
  auth: 3,
  notFound: 4,
  /** Any other error the API answered with (validation, conflict, query error...). */
  api: 5,
  /** The server could not be reached or did not answer in time. */
  network: 6,
  /** The server does not have this operation (an older Slipway). */
  unsupported: 7,
} as const;

/** An error the CLI reports itself, with its exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

export interface Context {
  out: Output;
  signal: AbortSignal;
  env: NodeJS.ProcessEnv;
  flags: {
    follow: boolean;
    secret: boolean;
    url?: string;
    token?: string;
    tail?: string;
    project?: string;
    actor?: string;
    operation?: string;
    since?: string;
    limit?: string;
    /** `service create|update`: the image or repository, the port, the replicas and the placement. */
    image?: string;
    repo?: string;
    port?: string;
    replicas?: string;
    must?: string[];
    mustNot?: string[];
    role?: string;
    anywhere?: boolean;
  };
}

export function exitCodeOf(error: SlipwayError): number {
  switch (error.code) {
    case 'unauthorized':
    case 'forbidden':
      return EXIT.auth;
    case 'not_found':
      return EXIT.notFound;
    case 'network_error':
    case 'aborted':
      return EXIT.network;
    default:
      return EXIT.api;
  }
}

function connect(ctx: Context): SlipwayClient {
  const { url, token } = credentials(ctx.env);
  if (!url || !token) {
    throw new CliError('Not logged in: run `slipway login --url <url> --token <key>`, or set SLIPWAY_URL and SLIPWAY_TOKEN', EXIT.auth);
  }
  return createClient({ url, token, clientName: 'cli' });
}

function need(args: string[], count: number, usage: string): string[] {
  if (args.length !== count) throw new CliError(`usage: slipway ${usage}`, EXIT.usage);
  return args;
}

const matches = (item: { id: string; slug: string; name: string }, ref: string) =>
  item.id === ref || item.slug === ref || item.name === ref;

async function findProject(client: SlipwayClient, ref: string, signal: AbortSignal): Promise<Project> {
  const projects = await listAllProjects(client, { signal });
  const found = projects.filter((p) => matches(p, ref));
  if (found.length === 0) throw new CliError(`No project "${ref}" (see \`slipway projects\`)`, EXIT.notFound);
  if (found.length > 1) throw new CliError(`"${ref}" names ${found.length} projects: use its id or slug`, EXIT.usage);
  return found[0]!;
}

/** A service by id, by `project/service` (slug or name), or by its slug or name alone when only one project has it. */
async function findService(client: SlipwayClient, ref: string, signal: AbortSignal): Promise<Service> {
  const projects = await listAllProjects(client, { signal });
  const slash = ref.indexOf('/');
  const projectRef = slash > 0 ? ref.slice(0, slash) : undefined;
  const serviceRef = slash > 0 ? ref.slice(slash + 1) : ref;
  const found = projects
    .filter((p) => projectRef === undefined || matches(p, projectRef))
    .flatMap((p) => p.services.filter((s) => matches(s, serviceRef)).map((s) => ({ s, where: `${p.slug}/${s.slug}` })));
  if (found.length === 0) throw new CliError(`No service "${ref}" (see \`slipway services <project>\`)`, EXIT.notFound);
  if (found.length > 1) {
    throw new CliError(
      `"${ref}" names ${found.length} services (${found.map((f) => f.where).join(', ')}): say <project>/<service>`,
      EXIT.usage,
    );
  }
  return found[0]!.s;
}

export async function login(ctx: Context, args: string[]): Promise<number> {
  need(args, 0, 'login --url <url> --token <key>');
  const url = ctx.flags.url ?? ctx.env.SLIPWAY_URL;
  const token = ctx.flags.token ?? ctx.env.SLIPWAY_TOKEN;
  if (!url || !token) throw new CliError('usage: slipway login --url <url> --token <key>', EXIT.usage);
  // A key that cannot list projects is no login: say so now, not at the first command.
  const client = createClient({ url, token });
  const projects = await listAllProjects(client, { signal: ctx.signal });
  const file = writeConfig({ url, token }, ctx.env);
  ctx.out.result(
    { url, config: file, projects: projects.length },
    () => `Logged in to ${url} (${projects.length} projects visible); saved in ${file}`,
  );
  return EXIT.ok;
}

export async function logout(ctx: Context, args: string[]): Promise<number> {
  need(args, 0, 'logout');
  removeConfig(ctx.env);
  ctx.out.result({ ok: true }, () => 'Logged out');
  return EXIT.ok;
}

export async function projects(ctx: Context, args: string[]): Promise<number> {
  need(args, 0, 'projects');
  const projects = await listAllProjects(connect(ctx), { signal: ctx.signal });
  ctx.out.result(projects, () =>
    table(
      ['NAME', 'SLUG', 'STATUS', 'SERVICES', 'ID'],
      projects.map((p) => [p.name, p.slug, p.status, p.serviceCount, p.id]),
      'No projects',
    ),
  );
  return EXIT.ok;
}

export async function services(ctx: Context, args: string[]): Promise<number> {
  const [ref] = need(args, 1, 'services <project>');
  const project = await findProject(connect(ctx), ref!, ctx.signal);
  ctx.out.result(project.services, () =>
    table(
      ['NAME', 'SLUG', 'STATUS', 'URL', 'ID'],
      project.services.map((s) => [s.name, s.slug, s.status, s.primaryUrl, s.id]),
      'No services',
    ),
  );
  return EXIT.ok;
}

/** The placement the flags name: undefined when none is given, null for `--anywhere`; the flags replace it whole. */
export function placementOf(flags: Context['flags']): ServicePlacement | null | undefined {
  const given = (flags.must?.length ?? 0) > 0 || (flags.mustNot?.length ?? 0) > 0 || flags.role !== undefined;
  if (flags.anywhere) {
    if (given) throw new CliError('--anywhere clears the placement: give it without --must, --must-not or --role', EXIT.usage);
    return null;
  }
  if (!given) return undefined;
  if (flags.role !== undefined && !['manager', 'worker', 'any'].includes(flags.role))
    throw new CliError(`--role must be manager, worker or any, not "${flags.role}"`, EXIT.usage);
  return {
    must: labelsOf('--must', flags.must),
    mustNot: labelsOf('--must-not', flags.mustNot),
    role: flags.role === undefined || flags.role === 'any' ? null : (flags.role as 'manager' | 'worker'),
  };
}

function labelsOf(flag: string, pairs: string[] = []): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new CliError(`${flag} takes key=value, not "${pair}"`, EXIT.usage);
    labels[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return labels;
}

function countOf(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new CliError(`${flag} takes a whole number, not "${value}"`, EXIT.usage);
  return Number(value);
}

const SERVICE_USAGE =
  'service create <project> <name> (--image <ref> | --repo <url>) [--port N] [--replicas N] [--must k=v]... [--must-not k=v]... [--role manager|worker|any]\n' +
  '       slipway service update <service> [--replicas N] [--must k=v]... [--must-not k=v]... [--role manager|worker|any] [--anywhere]';

/**
 * `slipway service create|update`: a service's replicas and where they may run on the cluster (docs/cluster.md,
 * Placement). The placement flags replace the service's placement whole; `--anywhere` clears it. The API checks the
 * labels (a `--must` label no server has is refused, naming those that exist).
 */
export async function service(ctx: Context, args: string[]): Promise<number> {
  const [action, ...rest] = args;
  const placement = placementOf(ctx.flags);
  const replicas = countOf('--replicas', ctx.flags.replicas);
  if (action === 'create') {
    const [projectRef, name] = need(rest, 2, SERVICE_USAGE);
    if (!!ctx.flags.image === !!ctx.flags.repo) throw new CliError(`usage: slipway ${SERVICE_USAGE}`, EXIT.usage);
    const internalPort = countOf('--port', ctx.flags.port);
    const client = connect(ctx);
    const project = await findProject(client, projectRef!, ctx.signal);
    const { service } = await client.services.create.mutate(
      {
        projectId: project.id,
        name: name!,
        ...(ctx.flags.image ? { repoUrl: 'container-image', containerImage: ctx.flags.image } : { repoUrl: ctx.flags.repo! }),
        ...(internalPort === undefined ? {} : { internalPort }),
        ...(replicas === undefined ? {} : { replicas }),
        ...(placement === undefined ? {} : { placement }),
      },
      { signal: ctx.signal },
    );
    ctx.out.result({ service }, () => `Created ${service.name} (${service.id})${describePlacement(service.placement)}`);
    return EXIT.ok;
  }
  if (action === 'update') {
    const [ref] = need(rest, 1, SERVICE_USAGE);
    if (placement === undefined && replicas === undefined) throw new CliError(`usage: slipway ${SERVICE_USAGE}`, EXIT.usage);
    const client = connect(ctx);
    const found = await findService(client, ref!, ctx.signal);
    const { service } = await client.services.update.mutate(
      {
        serviceId: found.id,
        ...(replicas === undefined ? {} : { replicas }),
        ...(placement === undefined ? {} : { placement }),
      },
      { signal: ctx.signal },
    );
    ctx.out.result({ service }, () => `Updated ${service.name}: ${service.replicas} replica(s)${describePlacement(service.placement)}`);
    return EXIT.ok;
  }
  throw new CliError(`usage: slipway ${SERVICE_USAGE}`, EXIT.usage);
}

function describePlacement(placement: ServicePlacement | null | undefined): string {
  if (!placement) return ', anywhere';
  const parts = [
    ...Object.entries(placement.must ?? {}).map(([k, v]) => `${k}=${v}`),
    ...Object.entries(placement.mustNot ?? {}).map(([k, v]) => `${k}!=${v}`),
    ...(placement.role ? [`role=${placement.role}`] : []),
  ];
  return parts.length ? `, on servers with ${parts.join(', ')}` : ', anywhere';
}

export async function deploy(ctx: Context, args: string[]): Promise<number> {
  const [ref] = need(args, 1, 'deploy <service> [--follow]');
  const client = connect(ctx);
  const service = await findService(client, ref!, ctx.signal);
  const { deployment } = await client.deployments.create.mutate({ serviceId: service.id }, { signal: ctx.signal });
  if (!ctx.flags.follow) {
    ctx.out.result(
      deployment,
      () => `Deployment ${deployment.id} ${deployment.status} (follow it with \`slipway deploy ${ref} --follow\`)`,
    );
    return EXIT.ok;
  }
  ctx.out.note(`Deployment ${deployment.id} of ${service.name}`);
  return follow(ctx, client, deployment.id);
}

/** Prints a deployment's log as it comes, then its outcome; non-zero unless it succeeded. */
async function follow(ctx: Context, client: SlipwayClient, deploymentId: string): Promise<number> {
  const started = Date.now();
  const waiting = ctx.out.progress('Waiting for the build to start…');
  const ticker = setInterval(() => waiting.update(`Waiting for the build to start… ${Math.round((Date.now() - started) / 1000)} s`), 1000);
  ticker.unref();
  let last: DeploymentLogLine | undefined;
  const print = (line: DeploymentLogLine) => {
    if (!last) {
      clearInterval(ticker);
      waiting.done();
    }
    last = line;
    ctx.out.event({ type: 'log', ...line }, line.line);
  };
  try {
    await new Promise<void>((resolve, reject) => {
      client.deployments.stream.subscribe(
        { deploymentId },
        {
          signal: ctx.signal,
          onData(value) {
            const event = eventOf(value);
            if (event.type === 'snapshot') for (const line of event.lines as DeploymentLogLine[]) print(line);
            else if (event.type === 'log') print(event.line as DeploymentLogLine);
          },
          onError: reject,
          onComplete: resolve,
        },
      );
    });
  } finally {
    clearInterval(ticker);
    waiting.done();
  }
  const deployment = await settled(client, deploymentId, ctx.signal);
  if (deployment.status === 'succeeded') {
    ctx.out.event({ type: 'result', deployment }, `Deployment ${deployment.id} succeeded`);
    return EXIT.ok;
  }
  ctx.out.event({ type: 'result', deployment }, `Deployment ${deployment.id} ${deployment.status}`);
  // In CI the reason is what matters: the last line the build wrote, on stderr too.
  process.stderr.write(`error: deployment ${deployment.id} ${deployment.status}${last ? `: ${last.line}` : ''}\n`);
  return EXIT.failed;
}

/** The stream ends when the deployment finishes; its final status is read right after (briefly polled in case it lands a moment later). */
async function settled(client: SlipwayClient, deploymentId: string, signal: AbortSignal): Promise<Deployment> {
  for (let attempt = 0; ; attempt++) {
    const { deployment } = await client.deployments.get.query({ deploymentId }, { signal });
    if (!['queued', 'running'].includes(deployment.status) || attempt >= 20) return deployment;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** A tracked event arrives as `{id, data}`, an untracked one as itself. */
function eventOf(value: unknown): { type: string; [key: string]: unknown } {
  const v = value as { id?: unknown; data?: { type?: unknown }; type?: unknown };
  if (typeof v.id === 'string' && v.data && typeof v.data.type === 'string') return v.data as { type: string };
  return v as { type: string };
}

export async function logs(ctx: Context, args: string[]): Promise<number> {
  const [ref] = need(args, 1, 'logs <service> [--follow] [--tail N]');
  const client = connect(ctx);
  const service = await findService(client, ref!, ctx.signal);
  const tail = ctx.flags.tail === undefined ? undefined : Number(ctx.flags.tail);
  if (tail !== undefined && (!Number.isInteger(tail) || tail < 0)) throw new CliError('--tail takes a whole number of lines', EXIT.usage);
  const done = new AbortController();
  const signal = AbortSignal.any([ctx.signal, done.signal]);
  await new Promise<void>((resolve, reject) => {
    signal.addEventListener('abort', () => resolve(), { once: true });
    client.deployments.runtimeLogs.subscribe(
      { serviceId: service.id, ...(tail === undefined ? {} : { tail }) },
      {
        signal,
        onData(value) {
          const event = eventOf(value);
          const print = (line: { line: string }) => ctx.out.event({ type: 'log', ...line }, line.line);
          if (event.type === 'snapshot') {
            for (const line of event.lines as Array<{ line: string }>) print(line);
            if (!ctx.flags.follow) done.abort();
          } else if (event.type === 'log') print(event.line as { line: string });
          else if (event.type === 'status' && event.closed) {
            if (!event.ok) ctx.out.note(`(${service.name} is not running)`);
            done.abort();
          }
        },
        onError: reject,
        onComplete: resolve,
      },
    );
  });
  return EXIT.ok;
}

export async function env(ctx: Context, args: string[]): Promise<number> {
  const [action, ref, ...rest] = args;
  const usage = 'env list <service> | env set <service> KEY=VALUE... [--secret] | env unset <service> KEY...';
  if (!ref || !['list', 'set', 'unset'].includes(action ?? '')) throw new CliError(`usage: slipway ${usage}`, EXIT.usage);
  const client = connect(ctx);
  const service = await findService(client, ref, ctx.signal);
  if (action === 'list') {
    need(rest, 0, 'env list <service>');
    const { env } = await client.services.overview.query({ serviceId: service.id }, { signal: ctx.signal });
    ctx.out.result(env, () =>
      table(
        ['KEY', 'VALUE', 'PROBLEMS'],
        env.map((v) => [v.key, v.secret ? '(secret)' : v.value, v.problems.join('; ') || '']),
        'No variables',
      ),
    );
    return EXIT.ok;
  }
  if (rest.length === 0) throw new CliError(`usage: slipway ${usage}`, EXIT.usage);
  if (action === 'set') {
    const pairs = rest.map((pair) => {
      const eq = pair.indexOf('=');
      if (eq <= 0) throw new CliError(`"${pair}" is not KEY=VALUE`, EXIT.usage);
      return { key: pair.slice(0, eq), value: pair.slice(eq + 1) };
    });
    for (const { key, value } of pairs) {
      await client.env.set.mutate(
        { serviceId: service.id, key, value, ...(ctx.flags.secret ? { secret: true } : {}) },
        { signal: ctx.signal },
      );
    }
    const keys = pairs.map((p) => p.key);
    ctx.out.result({ ok: true, set: keys }, () => `Set ${keys.join(', ')} on ${service.name} (deploy to apply)`);
    return EXIT.ok;
  }
  const { env } = await client.services.overview.query({ serviceId: service.id }, { signal: ctx.signal });
  for (const key of rest) {
    const variable = env.find((v) => v.key === key);
    if (!variable) throw new CliError(`${service.name} has no variable ${key}`, EXIT.notFound);
    await client.env.delete.mutate({ serviceId: service.id, envId: variable.id }, { signal: ctx.signal });
  }
  ctx.out.result({ ok: true, unset: rest }, () => `Unset ${rest.join(', ')} on ${service.name} (deploy to apply)`);
  return EXIT.ok;
}

export async function domains(ctx: Context, args: string[]): Promise<number> {
  const [action, ref, ...rest] = args;
  const usage = 'domains list <service> | domains add <service> <hostname> | domains rm <service> <hostname>';
  if (!ref || !['list', 'add', 'rm'].includes(action ?? '')) throw new CliError(`usage: slipway ${usage}`, EXIT.usage);
  const client = connect(ctx);
  const service = await findService(client, ref, ctx.signal);
  if (action === 'list') {
    need(rest, 0, 'domains list <service>');
    const { domains } = await client.services.overview.query({ serviceId: service.id }, { signal: ctx.signal });
    ctx.out.result(domains, () =>
      table(
        ['HOSTNAME', 'STATUS', 'ID'],
        domains.map((d) => [d.hostname, d.status, d.id]),
        'No domains',
      ),
    );
    return EXIT.ok;
  }
  const [hostname] = need(rest, 1, `domains ${action} <service> <hostname>`);
  if (action === 'add') {
    const answer = await client.domains.create.mutate({ serviceId: service.id, hostname: hostname! }, { signal: ctx.signal });
    ctx.out.result(answer, () => `Added ${answer.domain.hostname} to ${service.name}`);
    return EXIT.ok;
  }
  const { domains } = await client.services.overview.query({ serviceId: service.id }, { signal: ctx.signal });
  const domain = domains.find((d) => d.hostname === hostname!.toLowerCase() || d.id === hostname);
  if (!domain) throw new CliError(`${service.name} has no domain ${hostname}`, EXIT.notFound);
  const answer = await client.domains.delete.mutate({ serviceId: service.id, domainId: domain.id }, { signal: ctx.signal });
  ctx.out.result(answer, () => `Removed ${domain.hostname} from ${service.name}`);
  return EXIT.ok;
}

export async function db(ctx: Context, args: string[]): Promise<number> {
  const [action, ref, sql, ...rest] = args;
  if (action !== 'query' || !ref || sql === undefined || rest.length > 0)
    throw new CliError('usage: slipway db query <service> "<sql>"', EXIT.usage);
  const client = connect(ctx);
  const service = await findService(client, ref, ctx.signal);
  const result = await client.databases.query.mutate({ serviceId: service.id, sql }, { signal: ctx.signal });
  ctx.out.result(result, () => {
    const rows = result.rows.map((row) =>
      result.columns.map((c) => {
        const cell = (row as Record<string, unknown>)[c.name];
        return cell === null || cell === undefined ? null : typeof cell === 'object' ? JSON.stringify(cell) : String(cell);
      }),
    );
    const summary = `(${result.rowCount} row${result.rowCount === 1 ? '' : 's'}${result.truncated ? ', truncated' : ''})`;
    return result.columns.length === 0
      ? summary
      : `${table(
          result.columns.map((c) => c.name),
          rows,
          '',
        )}\n${summary}`.replace(/^\n/, '');
  });
  return EXIT.ok;
}

/**
 * Rolls a deployment back; a server older than rollback is told apart (tRPC answers "No procedure
 * found" for an unknown path) so that the CLI says so plainly.
 */
export async function rollback(ctx: Context, args: string[]): Promise<number> {
  const [deploymentId] = need(args, 1, 'rollback <deployment> [--follow]');
  const client = connect(ctx);
  let answer: { deployment: Deployment };
  try {
    answer = await client.deployments.rollback.mutate({ deploymentId: deploymentId! }, { signal: ctx.signal });
  } catch (error) {
    if (error instanceof SlipwayError && error.code === 'not_found' && /no procedure found/i.test(error.message)) {
      throw new CliError('Rollback is not supported by this server', EXIT.unsupported);
    }
    throw error;
  }
  const created = answer.deployment;
  if (ctx.flags.follow) {
    ctx.out.note(`Rolling back: deployment ${created.id}`);
    return follow(ctx, client, created.id);
  }
  ctx.out.result(answer, () => `Rolling back: deployment ${created.id} ${created.status}`);
  return EXIT.ok;
}

/** `slipway audit`: the audit log, newest first (the project's own with --project; the install's otherwise). */
export async function audit(ctx: Context, args: string[]): Promise<number> {
  need(args, 0, 'audit [--project <project>] [--actor <id>] [--operation <name>] [--since <iso>] [--limit N]');
  const client = connect(ctx);
  const limit = ctx.flags.limit === undefined ? 50 : Number(ctx.flags.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new CliError('--limit must be a number from 1 to 500', EXIT.usage);
  const query = {
    limit,
    ...(ctx.flags.actor ? { actor: ctx.flags.actor } : {}),
    ...(ctx.flags.operation ? { operation: ctx.flags.operation } : {}),
    ...(ctx.flags.since ? { from: ctx.flags.since } : {}),
  };
  const { entries } = ctx.flags.project
    ? await client.audit.project.query(
        { projectId: (await findProject(client, ctx.flags.project, ctx.signal)).id, ...query },
        { signal: ctx.signal },
      )
    : await client.audit.list.query(query, { signal: ctx.signal });
  ctx.out.result(entries, () =>
    table(
      ['AT', 'ACTOR', 'OPERATION', 'DOOR', 'OUTCOME', 'TARGETS', 'ADDRESS'],
      entries.map((e) => [
        e.at,
        e.actor.id ? `${e.actor.kind}:${e.actor.id}` : e.actor.kind,
        e.operation,
        e.door,
        e.outcome,
        e.targetIds.join(','),
        e.clientAddress ?? '',
      ]),
      'No audit records',
    ),
  );
  return EXIT.ok;
}

/** `slipway pitr show|enable|disable|restore <service> ...`: point-in-time recovery of a PostgreSQL or TimescaleDB service. */
export async function pitr(ctx: Context, args: string[]): Promise<number> {
  const [action, ref, ...rest] = args;
  const usage =
    'usage: slipway pitr show <service> | enable <service> [<storage> [<retentionDays>]] | disable <service> | restore <service> <ISO time>';
  if (!action || !ref || !['show', 'enable', 'disable', 'restore'].includes(action)) throw new CliError(usage, EXIT.usage);
  const client = connect(ctx);
  const service = await findService(client, ref, ctx.signal);
  const show = (p: Awaited<ReturnType<typeof client.pitr.get.query>>['pitr']) =>
    [
      `${service.name}: point-in-time recovery ${p.enabled ? 'on' : 'off'} (${p.storage}, ${p.retentionDays} days)`,
      `window: ${p.window ? `${p.window.earliest} to ${p.window.latest}` : 'nothing reachable yet'}`,
      `archive lag: ${p.lag.seconds} s, ${p.lag.pendingSegments} segments waiting${p.lag.lagging ? ' (lagging)' : ''}${p.lag.lastError ? `: ${p.lag.lastError}` : ''}`,
      `last base backup: ${p.lastBaseBackup ? `${p.lastBaseBackup.id} (${p.lastBaseBackup.finishedAt ?? p.lastBaseBackup.status})` : 'none'}`,
    ].join('\n');
  if (action === 'show') {
    need(rest, 0, 'pitr show <service>');
    const answer = await client.pitr.get.query({ serviceId: service.id }, { signal: ctx.signal });
    ctx.out.result(answer, () => show(answer.pitr));
    return EXIT.ok;
  }
  if (action === 'enable' || action === 'disable') {
    if (rest.length > (action === 'enable' ? 2 : 0)) throw new CliError(usage, EXIT.usage);
    const [storage, days] = rest;
    const retentionDays = days === undefined ? undefined : Number(days);
    const answer = await client.pitr.put.mutate(
      {
        serviceId: service.id,
        enabled: action === 'enable',
        ...(storage ? { storage } : {}),
        ...(retentionDays !== undefined ? { retentionDays } : {}),
      },
      { signal: ctx.signal },
    );
    ctx.out.result(answer, () => show(answer.pitr));
    return EXIT.ok;
  }
  const [at] = need(rest, 1, 'pitr restore <service> <ISO time>');
  const answer = await client.pitr.restore.mutate({ serviceId: service.id, at: at! }, { signal: ctx.signal });
  ctx.out.result(
    answer,
    () =>
      `Restore ${answer.restore.id} of ${service.name} to ${answer.restore.at} queued (from base backup ${answer.restore.baseBackupId})`,
  );
  return EXIT.ok;
}
