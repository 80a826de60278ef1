import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type SlipwayClient } from '../../packages/client/src/index.js';
import { appRouter } from '../../routers/app.router.js';
import { provisionDocker } from '../helpers/docker.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/**
 * @slipway/client as a user gets it: `npm pack`, installed from the tarball into a fresh project
 * outside this repository (its dependencies from the npm registry), then used from plain Node, from
 * strict TypeScript, and as the `slipway` CLI against a running server.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const PACKAGE = path.join(ROOT, 'packages/client');
/** What must never come along with the client: the server's own dependencies. */
const SERVER_ONLY = ['dockerode', '@mikro-orm/core', 'koa', 'esbuild', 'zod', 'mysql2', 'pg', 'tsx'];

let work: string;
let app: string;
let server: ServerProcess;
let client: SlipwayClient;

/** npm as a user runs it: none of the npm_* settings of the `npm test` this runs under (they name this repository). */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
  return { ...env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`, ...extra };
}

function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeout?: number },
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd: options.cwd, env: options.env ?? userEnv(), timeout: options.timeout ?? 120_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Bytes on disk under a directory (file sizes, symlinks not followed). */
function sizeOf(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += sizeOf(full);
    else if (entry.isFile()) total += statSync(full).size;
    else total += lstatSync(full).size;
  }
  return total;
}

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,redis' });
  if (process.env.SLIPWAY_TEST_BUILT !== '1' || !existsSync(path.join(PACKAGE, 'dist/index.d.ts'))) {
    execFileSync('npm', ['run', '-s', 'build', '-w', '@slipway/client'], { cwd: ROOT, stdio: 'inherit' });
  }
  work = mkdtempSync(path.join(tmpdir(), 'slipway-client-package-'));
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: PACKAGE, encoding: 'utf8', env: userEnv() }),
  ) as Array<{ filename: string; files: Array<{ path: string }> }>;
  const tarball = path.join(work, packed[0]!.filename);
  expect(packed[0]!.files.map((f) => f.path).sort()).toEqual(
    ['dist/cli.js', 'dist/errors.d.ts', 'dist/index.d.ts', 'dist/index.js', 'dist/router.d.ts', 'package.json'].sort(),
  );

  app = path.join(work, 'app');
  mkdirSync(app);
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'slipway-client-user', private: true, type: 'module' }));
  // The registry is the only source: the tarball names its dependencies, npm fetches them.
  const installed = await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', tarball], {
    cwd: app,
    timeout: 10 * 60_000,
  });
  expect(installed.code, installed.stderr).toBe(0);

  // Host ports of its own: another install on this machine (a parallel test) may take a port from
  // the default range between this one allocating it and its deployment binding it.
  const from = 30_000 + Math.floor(Math.random() * 27) * 100;
  server = await startServerProcess({
    BUILD_CONCURRENCY: '1',
    HEALTH_TIMEOUT_MS: '120000',
    STOP_GRACE_SECONDS: '1',
    HOST_PORT_RANGE: `${from}-${from + 99}`,
  });
  client = createClient({ url: server.url, token: server.token });
}, 20 * 60_000);

afterAll(async () => {
  if (client) {
    const { projects } = await client.projects.list.query().catch(() => ({ projects: [] }));
    for (const project of projects) await client.projects.delete.mutate({ projectId: project.id }).catch(() => {});
  }
  await server?.dispose();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the installed package', () => {
  it('brings the client and its few dependencies, none of the server', () => {
    const modules = path.join(app, 'node_modules');
    for (const name of SERVER_ONLY) expect(existsSync(path.join(modules, name)), name).toBe(false);
    const manifest = JSON.parse(readFileSync(path.join(modules, '@slipway/client/package.json'), 'utf8'));
    expect(Object.keys(manifest.dependencies).sort()).toEqual(['@trpc/client', '@trpc/server', 'eventsource', 'superjson']);
    // @trpc/client names TypeScript as a peer, which npm installs by default: reported apart.
    const typescript = ['typescript', '@typescript'].map((d) => path.join(modules, d)).filter((d) => existsSync(d));
    const total = sizeOf(modules);
    const tsSize = typescript.reduce((sum, d) => sum + sizeOf(d), 0);
    const packages = readdirSync(modules).flatMap((d) =>
      d.startsWith('@') ? readdirSync(path.join(modules, d)).map((n) => `${d}/${n}`) : d.startsWith('.') ? [] : [d],
    );
    console.log(
      `@slipway/client installed: ${(total / 1e6).toFixed(1)} MB in node_modules (${packages.length} packages: ${packages.join(', ')}); ` +
        `without the TypeScript peer: ${((total - tsSize) / 1e6).toFixed(1)} MB`,
    );
    expect(total - tsSize).toBeLessThan(10e6);
  });

  it('works from a plain .mjs file: creates a project, deploys an image service, follows its log', async () => {
    writeFileSync(
      path.join(app, 'deploy.mjs'),
      `import { createClient, SlipwayError } from '@slipway/client';
const [url, token] = process.argv.slice(2);
const client = createClient({ url, token });
const { project } = await client.projects.create.mutate({ name: 'From npm' });
const { service } = await client.services.create.mutate({
  projectId: project.id,
  name: 'web',
  repoUrl: 'container-image',
  containerImage: 'busybox:latest',
  internalPort: 3000,
  startCommand: 'echo hello-from-npm && mkdir -p /www && exec httpd -f -p 3000 -h /www',
});
const { deployment } = await client.deployments.create.mutate({ serviceId: service.id });
const lines = [];
await new Promise((resolve, reject) => {
  client.deployments.stream.subscribe({ deploymentId: deployment.id }, {
    onData({ data }) {
      if (data.type === 'snapshot') lines.push(...data.lines.map((l) => l.line));
      if (data.type === 'log') lines.push(data.line.line);
    },
    onError: reject,
    onComplete: resolve,
  });
});
let status = 'running';
for (let i = 0; i < 40 && (status === 'queued' || status === 'running'); i++) {
  status = (await client.deployments.get.query({ deploymentId: deployment.id })).deployment.status;
  if (status === 'queued' || status === 'running') await new Promise((r) => setTimeout(r, 250));
}
const error = await client.services.overview.query({ serviceId: 'missing' }).catch((e) => e);
console.log(JSON.stringify({
  project: project.slug,
  status,
  lines,
  error: { slipway: error instanceof SlipwayError, code: error.code, status: error.status },
}));
`,
    );
    const result = await run(process.execPath, ['deploy.mjs', server.url, server.token], { cwd: app, timeout: 240_000 });
    expect(result.code, result.stderr).toBe(0);
    const out = JSON.parse(result.stdout);
    expect(out.status, out.lines.join('\n')).toBe('succeeded');
    expect(out.project).toBe('from-npm');
    expect(out.lines.length).toBeGreaterThan(1);
    expect(out.error).toEqual({ slipway: true, code: 'not_found', status: 404 });
  }, 300_000);

  it('type-checks strict TypeScript (node16), and rejects a misspelt field', async () => {
    const install = await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', '--save-dev', 'typescript@7.0.2'], {
      cwd: app,
      timeout: 10 * 60_000,
    });
    expect(install.code, install.stderr).toBe(0);
    const source = `import { createClient, SlipwayError, type Deployment, type RouterOutputs } from '@slipway/client';

export async function main(signal: AbortSignal): Promise<Deployment['status']> {
  const client = createClient({ url: 'http://127.0.0.1:3000', token: 'key' });
  const { project } = await client.projects.create.mutate({ name: 'typed' }, { signal });
  const slug: string = project.slug;
  const { service } = await client.services.create.mutate({ projectId: project.id, name: 'web', containerImage: 'busybox:latest' });
  const overview: RouterOutputs['services']['overview'] = await client.services.overview.query({ serviceId: service.id });
  const port: number = overview.service.hostPort;
  const { deployment } = await client.deployments.create.mutate({ serviceId: service.id }, { signal });
  client.deployments.stream.subscribe(
    { deploymentId: deployment.id },
    { signal, onData: (event) => ('data' in event ? console.log(event.id, event.data.type) : undefined), onError: (e) => console.log(e.message) },
  );
  try {
    await client.env.set.mutate({ serviceId: service.id, key: 'PORT', value: String(port), secret: false });
  } catch (error) {
    if (error instanceof SlipwayError) console.log(error.code, error.status, error.details, slug);
  }
  return deployment.status;
}
`;
    // Every procedure the server has, with its kind, is in the installed package's types.
    const method = { query: 'query', mutation: 'mutate', subscription: 'subscribe' } as const;
    const procedures = Object.entries(appRouter._def.procedures as unknown as Record<string, { _def: { type: keyof typeof method } }>);
    expect(procedures.length).toBeGreaterThan(30);
    const every = procedures
      .map(
        ([p, procedure], i) =>
          `export type P${i} = SlipwayClient${p
            .split('.')
            .map((k) => `['${k}']`)
            .join('')}['${method[procedure._def.type]}'];`,
      )
      .join('\n');
    writeFileSync(path.join(app, 'good.ts'), `${source}\nimport type { SlipwayClient } from '@slipway/client';\n${every}\n`);
    writeFileSync(path.join(app, 'bad.ts'), source.replace("name: 'web'", "nmae: 'web'"));
    const options = {
      strict: true,
      noEmit: true,
      target: 'ES2022',
      module: 'node16',
      moduleResolution: 'node16',
      // tRPC's declarations name Disposable; a project with @types/node gets it from there.
      lib: ['ES2022', 'DOM', 'ESNext.Disposable'],
      types: [],
      skipLibCheck: false,
    };
    writeFileSync(path.join(app, 'tsconfig.good.json'), JSON.stringify({ compilerOptions: options, files: ['good.ts'] }));
    writeFileSync(path.join(app, 'tsconfig.bad.json'), JSON.stringify({ compilerOptions: options, files: ['bad.ts'] }));
    const tsc = path.join(app, 'node_modules/.bin/tsc');
    const good = await run(tsc, ['-p', 'tsconfig.good.json'], { cwd: app });
    expect(good.code, good.stdout + good.stderr).toBe(0);
    const bad = await run(tsc, ['-p', 'tsconfig.bad.json'], { cwd: app });
    expect(bad.code).not.toBe(0);
    expect(bad.stdout).toMatch(/bad\.ts\(7,\d+\): error TS\d+: .*'nmae'/);
  }, 600_000);
});

describe('the slipway CLI', () => {
  let config: string;
  const slipway = (args: string[], env: Record<string, string> = {}) =>
    run(path.join(app, 'node_modules/.bin/slipway'), args, {
      cwd: app,
      env: userEnv({ XDG_CONFIG_HOME: config, HOME: work, ...env }),
      timeout: 240_000,
    });
  let ci: Record<string, string>;

  beforeAll(async () => {
    config = path.join(work, 'config');
    ci = { SLIPWAY_URL: server.url, SLIPWAY_TOKEN: server.token };
    const { project } = await client.projects.create.mutate({ name: 'CLI' });
    await client.services.create.mutate({
      projectId: project.id,
      name: 'site',
      repoUrl: 'container-image',
      containerImage: 'busybox:latest',
      internalPort: 3000,
      startCommand: 'echo hello-from-cli && mkdir -p /www && exec httpd -f -p 3000 -h /www',
    });
    await client.services.create.mutate({
      projectId: project.id,
      name: 'broken',
      repoUrl: 'container-image',
      containerImage: 'busybox:latest',
      internalPort: 3000,
      startCommand: 'echo boom-from-ci; exit 3',
    });
  });

  it('logs in (the key kept mode 600), lists projects and services as tables or JSON', async () => {
    const denied = await slipway(['login', '--url', server.url, '--token', 'slw_wrong']);
    expect(denied.code).toBe(3);
    expect(denied.stderr).toMatch(/^error: .+\(unauthorized, HTTP 401\)/);

    const login = await slipway(['login', '--url', server.url, '--token', server.token]);
    expect(login.code, login.stderr).toBe(0);
    const file = path.join(config, 'slipway/config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ url: server.url, token: server.token });

    const projects = await slipway(['projects']);
    expect(projects.code, projects.stderr).toBe(0);
    expect(projects.stdout.split('\n')[0]).toMatch(/^NAME\s+SLUG\s+STATUS\s+SERVICES\s+ID$/);
    expect(projects.stdout).toMatch(/^CLI\s+cli\s+/m);
    const json = await slipway(['projects', '--json']);
    expect(JSON.parse(json.stdout).map((p: { slug: string }) => p.slug)).toContain('cli');

    const services = await slipway(['services', 'cli', '--json']);
    expect(
      JSON.parse(services.stdout)
        .map((s: { name: string }) => s.name)
        .sort(),
    ).toEqual(['broken', 'site']);
    // The environment wins over the stored login.
    const overridden = await slipway(['projects'], { SLIPWAY_TOKEN: 'slw_wrong' });
    expect(overridden.code).toBe(3);
  });

  it('deploys with --follow, streaming the log, and exits 0 when it succeeds', async () => {
    const result = await slipway(['deploy', 'cli/site', '--follow'], ci);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/Deployment \S+ succeeded/);
    const logs = await slipway(['logs', 'site'], ci);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toContain('hello-from-cli');

    // --follow keeps streaming until interrupted, then exits 130 as an interrupted command does.
    const following = spawn(path.join(app, 'node_modules/.bin/slipway'), ['logs', 'cli/site', '--follow'], {
      cwd: app,
      env: userEnv({ XDG_CONFIG_HOME: config, HOME: work, ...ci }),
    });
    let seen = '';
    following.stdout.on('data', (chunk: Buffer) => (seen += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => following.once('exit', (code) => resolve(code)));
    for (let i = 0; i < 200 && !seen.includes('hello-from-cli'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(seen).toContain('hello-from-cli');
    await new Promise((r) => setTimeout(r, 500));
    expect(following.exitCode).toBe(null);
    following.kill('SIGINT');
    expect(await exited).toBe(130);
  });

  it('fails a CI deploy --follow whose deployment fails: non-zero, with the failing line', async () => {
    const result = await slipway(['deploy', 'cli/broken', '--follow'], ci);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('boom-from-ci');
    expect(result.stderr).toMatch(/error: deployment \S+ failed: .*exited with code 3/);
    const json = await slipway(['deploy', 'broken', '--follow', '--json'], ci);
    expect(json.code).toBe(1);
    const events = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events.at(-1)).toMatchObject({ type: 'result', deployment: { status: 'failed' } });
    expect(events.filter((e) => e.type === 'log').length).toBeGreaterThan(0);
  });

  it('sets, lists and unsets variables; adds and removes domains', async () => {
    expect((await slipway(['env', 'set', 'cli/site', 'GREETING=hi there', 'TOKEN=s3cret', '--secret'], ci)).code).toBe(0);
    const listed = JSON.parse((await slipway(['env', 'list', 'cli/site', '--json'], ci)).stdout);
    expect(listed.map((v: { key: string; secret: boolean }) => [v.key, v.secret])).toEqual(
      expect.arrayContaining([
        ['GREETING', true],
        ['TOKEN', true],
      ]),
    );
    const table = await slipway(['env', 'list', 'cli/site'], ci);
    expect(table.stdout).not.toContain('s3cret');
    expect((await slipway(['env', 'set', 'cli/site', 'PLAIN=1'], ci)).code).toBe(0);
    expect((await slipway(['env', 'list', 'cli/site'], ci)).stdout).toMatch(/^PLAIN\s+1/m);
    expect((await slipway(['env', 'unset', 'cli/site', 'GREETING', 'TOKEN'], ci)).code).toBe(0);
    const after = JSON.parse((await slipway(['env', 'list', 'cli/site', '--json'], ci)).stdout);
    expect(after.map((v: { key: string }) => v.key)).toEqual(['PLAIN']);
    const invalid = await slipway(['env', 'set', 'cli/site', 'lower=1'], ci);
    expect(invalid.code).toBe(5);
    expect(invalid.stderr).toMatch(/^error: .*"lower".*\(validation_error, HTTP 400\)/);

    const added = await slipway(['domains', 'add', 'cli/site', 'cli-site.example.com'], ci);
    expect(added.code, added.stderr).toBe(0);
    expect((await slipway(['domains', 'list', 'cli/site'], ci)).stdout).toMatch(/^cli-site\.example\.com\s/m);
    expect((await slipway(['domains', 'rm', 'cli/site', 'cli-site.example.com'], ci)).code).toBe(0);
    expect((await slipway(['domains', 'list', 'cli/site'], ci)).stdout).toContain('No domains');
  });

  it('queries a database service', async () => {
    const { project } = await client.projects.bySlug.query({ projectSlug: 'cli' });
    await client.services.create.mutate({
      projectId: project.id,
      name: 'cache',
      repoUrl: 'database',
      repoFullName: 'database:redis',
      branch: 'main',
    });
    const deployed = await slipway(['deploy', 'cli/cache', '--follow'], ci);
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
    expect((await slipway(['db', 'query', 'cli/cache', 'SET greeting "hello from the cli"'], ci)).code).toBe(0);
    const got = await slipway(['db', 'query', 'cli/cache', 'GET greeting'], ci);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toContain('hello from the cli');
    expect(got.stdout).toMatch(/\(1 row\)\n$/);
    const json = JSON.parse((await slipway(['db', 'query', 'cli/cache', 'GET greeting', '--json'], ci)).stdout);
    expect(json).toMatchObject({ rowCount: 1, truncated: false });
  }, 300_000);

  it('prints the API message with a distinct exit code: db query on a non-database, unknown names; rolls a deployment back', async () => {
    const query = await slipway(['db', 'query', 'cli/site', 'select 1'], ci);
    expect(query.code).toBe(4);
    expect(query.stderr).toMatch(/^error: Database of service "\w+" was not found \(not_found, HTTP 404\)\n$/);
    const missing = await slipway(['deploy', 'cli/nothing'], ci);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toContain('No service "cli/nothing"');
    const usage = await slipway(['deploy'], ci);
    expect(usage.code).toBe(2);

    // Rollback: a deployment that went live runs again, followed like a deploy; a server without the
    // procedure (older than rollback) would make the CLI say so with exit 7.
    const site = (await client.projects.bySlug.query({ projectSlug: 'cli' })).project.services.find((s) => s.name === 'site')!;
    const { deployments } = await client.deployments.list.query({ serviceId: site.id });
    const live = deployments.find((d) => d.status === 'succeeded')!;
    const rollback = await slipway(['rollback', live.id, '--follow'], ci);
    expect(rollback.code, rollback.stderr).toBe(0);
    expect(`${rollback.stdout}${rollback.stderr}`).toMatch(/Rolling back: deployment \w+/);
    const after = (await client.deployments.list.query({ serviceId: site.id })).deployments[0]!;
    expect(after).toMatchObject({ trigger: 'rollback', status: 'succeeded' });
    const never = deployments.find((d) => d.status === 'failed');
    if (never) expect((await slipway(['rollback', never.id], ci)).code).toBe(5);
  });
});
