import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DATABASE_ENGINES, ENGINE_SPECS, engineOf, isDatabaseEngine, type DatabaseEngine } from '../../src/domain/database-engines.js';
import {
  assertTransition,
  DEPLOYMENT_STATUSES,
  isAbortable,
  isTerminal,
  type DeploymentStatus,
} from '../../src/domain/deployment-state.js';
import { describeProblem, resolveValue, type ProjectEnv, type ReferenceProblem } from '../../src/domain/env-references.js';
import { ConflictError, ValidationError } from '../../src/domain/errors.js';
import { slugify, uniqueSlug } from '../../src/domain/slug.js';
import { assertEnvKey, assertImageReference, assertRemoteGitUrl, normalizeHostname } from '../../src/domain/validation.js';

/** Runs `fn` and returns what it threw (failing the test when it did not throw). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  expect.fail('expected the call to throw');
}

function projectEnv(services: Record<string, Record<string, string>>): ProjectEnv {
  return new Map(Object.entries(services).map(([slug, vars]) => [slug, new Map(Object.entries(vars))]));
}

describe('slugify', () => {
  it.each([
    ['My App', 'my-app'],
    ['my-app', 'my-app'],
    ['  Hello,   World!  ', 'hello-world'],
    ['--Leading and trailing--', 'leading-and-trailing'],
    ['snake_case_name', 'snake-case-name'],
    ['Crème Brûlée', 'creme-brulee'],
    ['Ångström Über Naïve', 'angstrom-uber-naive'],
    ['API v2.0', 'api-v2-0'],
    ['123', '123'],
    ['a---b', 'a-b'],
  ])('%j -> %j', (name, slug) => {
    expect(slugify(name)).toBe(slug);
  });

  it.each(['', '   ', '!!!', '日本語', '---'])('falls back to "item" when nothing usable is left (%j)', (name) => {
    expect(slugify(name)).toBe('item');
  });

  it('is DNS safe: lower case letters, digits and single inner hyphens only', () => {
    for (const name of ['Some  Weird__Name!!', 'ÉTÉ 2024 / Été', 'x'.repeat(200), 'a - b - c', 'Tab\tand\nnewline']) {
      expect(slugify(name)).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/);
    }
  });

  it('keeps at most 48 characters and never ends on a hyphen after cutting', () => {
    expect(slugify('a'.repeat(100))).toBe('a'.repeat(48));
    // The 48th character would be the hyphen between the words: it is dropped.
    const cut = slugify(`${'a'.repeat(47)} bbbb`);
    expect(cut).toBe('a'.repeat(47));
    expect(cut.length).toBeLessThanOrEqual(48);
  });
});

describe('uniqueSlug', () => {
  it('returns the base when it is free', () => {
    expect(uniqueSlug('my-app', new Set())).toBe('my-app');
    expect(uniqueSlug('my-app', new Set(['other', 'my-app-2']))).toBe('my-app');
  });

  it('appends -2, -3, ... until a free one is found', () => {
    expect(uniqueSlug('my-app', new Set(['my-app']))).toBe('my-app-2');
    expect(uniqueSlug('my-app', new Set(['my-app', 'my-app-2']))).toBe('my-app-3');
    expect(uniqueSlug('my-app', new Set(['my-app', 'my-app-2', 'my-app-3', 'my-app-4']))).toBe('my-app-5');
  });

  it('fills the first gap', () => {
    expect(uniqueSlug('my-app', new Set(['my-app', 'my-app-3']))).toBe('my-app-2');
  });
});

describe('assertEnvKey', () => {
  it.each(['A', '_', 'PORT', 'DATABASE_URL', '_PRIVATE', 'A1', 'X_2_Y', 'A'.repeat(200)])('accepts %j', (key) => {
    expect(() => assertEnvKey(key)).not.toThrow();
  });

  it.each(['', 'a', 'lower_case', 'Mixed', '1ABC', '9', 'A-B', 'A.B', 'A B', ' A', 'A ', 'A\n', 'ÄPFEL', 'A$', '${A}'])(
    'refuses %j',
    (key) => {
      expect(() => assertEnvKey(key)).toThrow(ValidationError);
    },
  );

  it('names the offending field in the error details', () => {
    const error = thrown(() => assertEnvKey('bad-key', 'env.3.key'));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe('validation_error');
    expect((error as ValidationError).details).toMatchObject({ field: 'env.3.key' });
    expect((thrown(() => assertEnvKey('x')) as ValidationError).details).toMatchObject({ field: 'key' });
  });
});

describe('normalizeHostname (RFC 1123)', () => {
  it('lower-cases and trims', () => {
    expect(normalizeHostname('App.Example.COM')).toBe('app.example.com');
    expect(normalizeHostname('  www.example.com  ')).toBe('www.example.com');
  });

  it('drops a single trailing dot (fully qualified form)', () => {
    expect(normalizeHostname('example.com.')).toBe('example.com');
    expect(normalizeHostname('Sub.Example.Org.')).toBe('sub.example.org');
  });

  it.each([
    'example.com',
    'a.b',
    'my-app.example.com',
    'a1.b2.c3.example.io',
    'xn--bcher-kva.example',
    '123.example.com',
    'x.y.z.w.example.co.uk',
    'a-b-c.d',
  ])('accepts %j', (hostname) => {
    expect(normalizeHostname(hostname)).toBe(hostname);
  });

  it('accepts labels of exactly 63 characters and refuses 64', () => {
    expect(normalizeHostname(`${'a'.repeat(63)}.com`)).toBe(`${'a'.repeat(63)}.com`);
    expect(() => normalizeHostname(`${'a'.repeat(64)}.com`)).toThrow(ValidationError);
    expect(() => normalizeHostname(`example.${'c'.repeat(64)}`)).toThrow(ValidationError);
  });

  it('accepts 253 characters in all and refuses 254', () => {
    const l63 = 'a'.repeat(63);
    const h253 = `${l63}.${l63}.${l63}.${'b'.repeat(61)}`;
    const h254 = `${l63}.${l63}.${l63}.${'b'.repeat(62)}`;
    expect(h253).toHaveLength(253);
    expect(h254).toHaveLength(254);
    expect(normalizeHostname(h253)).toBe(h253);
    expect(() => normalizeHostname(h254)).toThrow(ValidationError);
    // The trailing dot does not count.
    expect(normalizeHostname(`${h253}.`)).toBe(h253);
  });

  it.each([
    ['underscore', 'my_app.example.com'],
    ['underscore in the last label', 'example.co_m'],
    ['leading hyphen', '-app.example.com'],
    ['trailing hyphen', 'app-.example.com'],
    ['leading hyphen in the last label', 'example.-com'],
    ['single label', 'localhost'],
    ['single label with trailing dot', 'localhost.'],
    ['empty', ''],
    ['blank', '   '],
    ['only a dot', '.'],
    ['empty label', 'a..example.com'],
    ['leading dot', '.example.com'],
    ['two trailing dots', 'example.com..'],
    ['IPv4 address', '192.168.1.10'],
    ['IP-like, out of range', '10.0.0.300'],
    ['all-numeric TLD', 'example.123'],
    ['space inside', 'my app.example.com'],
    ['scheme', 'https://example.com'],
    ['port', 'example.com:8080'],
    ['path', 'example.com/path'],
    ['wildcard', '*.example.com'],
    ['non-ASCII', 'bücher.example'],
    ['IPv6', '[::1]'],
  ])('refuses %s (%j)', (_what, hostname) => {
    expect(() => normalizeHostname(hostname)).toThrow(ValidationError);
  });

  it('reports the field it was given', () => {
    expect((thrown(() => normalizeHostname('nope')) as ValidationError).details).toMatchObject({ field: 'hostname' });
    expect((thrown(() => normalizeHostname('nope', 'databasePublicHostname')) as ValidationError).details).toMatchObject({
      field: 'databasePublicHostname',
    });
  });
});

describe('assertRemoteGitUrl', () => {
  it.each([
    'https://github.com/acme/web.git',
    'https://github.com/acme/web',
    'http://git.example.com/team/repo.git',
    'https://user:token@gitlab.example.com/group/sub/repo.git',
    'ssh://git@github.com/acme/web.git',
    'ssh://git@example.com:2222/acme/web.git',
    'git://git.example.org/project.git',
    'git@github.com:acme/web.git',
    'deploy.user@git.example.com:team/repo.git',
  ])('accepts %j', (url) => {
    expect(() => assertRemoteGitUrl(url)).not.toThrow();
  });

  it.each([
    'file:///srv/repos/app.git',
    'file://localhost/srv/repo',
    'file:relative/path',
    '/local/path',
    '/srv/repos/app.git',
    '../x',
    './repo',
    'repo',
    '~/repo',
    'C:\\repos\\app',
    '',
    'ftp://example.com/repo.git',
    'ext::sh -c touch% /tmp/pwned',
    'https://example.com/repo with space.git',
    'https://',
    'git@github.com:',
  ])('refuses %j', (url) => {
    const error = thrown(() => assertRemoteGitUrl(url));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details).toMatchObject({ field: 'repoUrl' });
  });
});

describe('assertImageReference', () => {
  const digest = `sha256:${'a1'.repeat(32)}`;
  it.each([
    'nginx',
    'nginx:latest',
    'nginx:1.25-alpine',
    'library/nginx:1.25',
    'ghcr.io/acme/web:v1.2.3',
    'registry.example.com:5000/team/app:tag_1',
    'localhost:5000/app',
    'localhost/app',
    'my_app',
    'my-app.v2',
    'a__b',
    `nginx@${digest}`,
    `nginx:1.25@${digest}`,
    `ghcr.io/acme/web@${digest}`,
    `nginx:${'t'.repeat(128)}`,
  ])('accepts %j', (ref) => {
    expect(() => assertImageReference(ref)).not.toThrow();
  });

  it.each([
    '',
    'Nginx',
    'acme/Web',
    'Acme/web',
    'ACME_CORP/web',
    'nginx:',
    'nginx::1',
    'nginx:-tag',
    'nginx:.tag',
    `nginx:${'t'.repeat(129)}`,
    '-nginx',
    'nginx-',
    'nginx/',
    '/nginx',
    'nginx tag',
    'https://registry.example.com/app',
    'nginx;rm -rf /',
    '$(id)',
    'nginx@sha256:abc',
    'nginx@',
  ])('refuses %j', (ref) => {
    const error = thrown(() => assertImageReference(ref));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details).toMatchObject({ field: 'containerImage' });
  });
});

describe('resolveValue', () => {
  const self = { serviceSlug: 'web', key: 'X' };

  it('returns a value without references unchanged, with no problems and nothing reached', () => {
    const result = resolveValue('plain value $HOME ${NOT_A_REF} ${web} {web.X}', projectEnv({ web: {} }), self);
    expect(result).toEqual({ value: 'plain value $HOME ${NOT_A_REF} ${web} {web.X}', problems: [], reached: [] });
  });

  it('resolves a simple reference to another service', () => {
    const env = projectEnv({ web: {}, db: { POSTGRES_USER: 'app' } });
    const result = resolveValue('user=${db.POSTGRES_USER}', env, self);
    expect(result).toEqual({ value: 'user=app', problems: [], reached: ['db.POSTGRES_USER'] });
  });

  it('resolves several references in one value, including the same one twice (not a cycle)', () => {
    const env = projectEnv({ web: {}, db: { USER: 'u', PASSWORD: 'p', HOST: 'db' } });
    const result = resolveValue('postgres://${db.USER}:${db.PASSWORD}@${db.HOST}/${db.USER}', env, self);
    expect(result.value).toBe('postgres://u:p@db/u');
    expect(result.problems).toEqual([]);
    expect(new Set(result.reached)).toEqual(new Set(['db.USER', 'db.PASSWORD', 'db.HOST']));
  });

  it('resolves references to the same service', () => {
    const env = projectEnv({ web: { HOST: 'example.com', URL: 'https://${web.HOST}/' } });
    expect(resolveValue('${web.URL}api', env, self)).toEqual({
      value: 'https://example.com/api',
      problems: [],
      reached: ['web.URL', 'web.HOST'],
    });
  });

  it('resolves nested references recursively across services and lists everything it reached', () => {
    const env = projectEnv({
      web: {},
      api: { URL: 'http://${api.HOST}:${api.PORT}', HOST: 'api', PORT: '${shared.PORT}' },
      shared: { PORT: '8080' },
    });
    const result = resolveValue('backend=${api.URL}', env, self);
    expect(result.value).toBe('backend=http://api:8080');
    expect(result.problems).toEqual([]);
    expect(new Set(result.reached)).toEqual(new Set(['api.URL', 'api.HOST', 'api.PORT', 'shared.PORT']));
  });

  it('takes replacement patterns in values literally', () => {
    const env = projectEnv({ web: {}, db: { PASSWORD: "p$&w$1$'$`$$" } });
    expect(resolveValue('${db.PASSWORD}', env, self).value).toBe("p$&w$1$'$`$$");
  });

  it('leaves an unknown service as written and reports it, without throwing', () => {
    const env = projectEnv({ web: {} });
    const result = resolveValue('a ${ghost.KEY} b', env, self);
    expect(result.value).toBe('a ${ghost.KEY} b');
    expect(result.problems).toEqual([{ kind: 'unknown_service', reference: '${ghost.KEY}', serviceSlug: 'ghost' }]);
    expect(result.reached).toEqual(['ghost.KEY']);
    expect(describeProblem(result.problems[0]!)).toContain('ghost');
  });

  it('leaves an unknown key as written and reports it, without throwing', () => {
    const env = projectEnv({ web: {}, db: { USER: 'u' } });
    const result = resolveValue('${db.USER}:${db.MISSING}', env, self);
    expect(result.value).toBe('u:${db.MISSING}');
    expect(result.problems).toEqual([{ kind: 'unknown_key', reference: '${db.MISSING}', serviceSlug: 'db', key: 'MISSING' }]);
    expect(new Set(result.reached)).toEqual(new Set(['db.USER', 'db.MISSING']));
    expect(describeProblem(result.problems[0]!)).toContain('MISSING');
  });

  it('reports problems found deep inside a chain of references', () => {
    const env = projectEnv({ web: {}, a: { X: '[${b.Y}]' }, b: { Y: '${c.Z}' } });
    const result = resolveValue('${a.X}', env, self);
    expect(result.value).toBe('[${c.Z}]');
    expect(result.problems).toEqual([{ kind: 'unknown_service', reference: '${c.Z}', serviceSlug: 'c' }]);
    expect(new Set(result.reached)).toEqual(new Set(['a.X', 'b.Y', 'c.Z']));
  });

  it('detects a self-reference as a cycle', () => {
    const env = projectEnv({ web: { X: 'pre-${web.X}' } });
    const result = resolveValue('pre-${web.X}', env, { serviceSlug: 'web', key: 'X' });
    expect(result.value).toBe('pre-${web.X}');
    expect(result.problems).toEqual([{ kind: 'cycle', reference: '${web.X}', chain: ['web.X', 'web.X'] }]);
    expect(result.reached).toEqual(['web.X']);
    expect(describeProblem(result.problems[0]!)).toContain('cycle');
  });

  it('detects a cycle across services without throwing', () => {
    const env = projectEnv({ a: { X: '${b.Y}' }, b: { Y: '${c.Z}' }, c: { Z: '${a.X}' } });
    const result = resolveValue('${b.Y}', env, { serviceSlug: 'a', key: 'X' });
    const cycles = result.problems.filter((p): p is Extract<ReferenceProblem, { kind: 'cycle' }> => p.kind === 'cycle');
    expect(cycles).toHaveLength(1);
    expect(cycles[0]!.chain).toEqual(['a.X', 'b.Y', 'c.Z', 'a.X']);
    expect(result.value).toContain('${a.X}');
    expect(new Set(result.reached)).toEqual(new Set(['b.Y', 'c.Z', 'a.X']));
  });

  it('detects a cycle that does not pass through the variable being resolved', () => {
    const env = projectEnv({ web: {}, a: { X: '${b.Y}' }, b: { Y: '${a.X}' } });
    const result = resolveValue('${a.X}', env, self);
    expect(result.problems.map((p) => p.kind)).toEqual(['cycle']);
    expect(result.value).toBe('${a.X}');
  });

  it('stops at the depth limit and reports it instead of recursing forever', () => {
    // s.K0 -> s.K1 -> ... -> s.K60: a chain far deeper than the limit, without a cycle.
    const vars: Record<string, string> = {};
    for (let i = 0; i < 60; i++) vars[`K${i}`] = `\${s.K${i + 1}}`;
    vars.K60 = 'bottom';
    const env = projectEnv({ s: vars });
    let result!: ReturnType<typeof resolveValue>;
    expect(() => {
      result = resolveValue('${s.K0}', env, { serviceSlug: 'web', key: 'X' });
    }).not.toThrow();
    expect(result.problems).toHaveLength(1);
    expect(result.problems[0]!.kind).toBe('too_deep');
    expect(result.value).toMatch(/^\$\{s\.K\d+\}$/);
    expect(result.value).not.toBe('bottom');
    expect(result.reached.length).toBeGreaterThan(10);
    expect(result.reached.length).toBeLessThan(60);
    expect(describeProblem(result.problems[0]!)).toContain('deeper');
  });

  it('resolves a chain well within the depth limit completely', () => {
    const vars: Record<string, string> = {};
    for (let i = 0; i < 20; i++) vars[`K${i}`] = `\${s.K${i + 1}}`;
    vars.K20 = 'bottom';
    const result = resolveValue('${s.K0}', projectEnv({ s: vars }), { serviceSlug: 'web', key: 'X' });
    expect(result).toMatchObject({ value: 'bottom', problems: [] });
    expect(result.reached).toHaveLength(21);
  });

  it('survives references that double at every level ("billion laughs") without hanging or throwing', () => {
    // K0 = ${s.K1}${s.K1}, K1 = ${s.K2}${s.K2}, ... 30 levels, all within the depth limit: expanding it
    // naively means 2^30 expansions and a value of 2^30 characters. A variable of a project must not
    // be able to hang or crash whoever lists the project's variables. Run in a child process so a hang
    // fails the test instead of blocking the test runner.
    const moduleUrl = new URL('../../src/domain/env-references.ts', import.meta.url).href;
    const script = `
      const { resolveValue } = await import(${JSON.stringify(moduleUrl)});
      const vars = new Map();
      for (let i = 0; i < 30; i++) vars.set('K' + i, '\${s.K' + (i + 1) + '}\${s.K' + (i + 1) + '}');
      vars.set('K30', 'xxxxxxxx');
      const result = resolveValue('\${s.K0}', new Map([['s', vars]]), { serviceSlug: 'web', key: 'X' });
      process.stdout.write(JSON.stringify({ length: result.value.length, problems: result.problems.length }));
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      timeout: 15_000,
      encoding: 'utf8',
    });
    expect(child.signal, 'resolution did not finish within 15 s').toBeNull();
    expect(child.status, child.stderr).toBe(0);
    const outcome = JSON.parse(child.stdout) as { length: number; problems: number };
    // Bounded output, and the truncated expansion is reported rather than silent.
    expect(outcome.length).toBeLessThanOrEqual(1024 * 1024);
    expect(outcome.problems).toBeGreaterThan(0);
  }, 30_000);
});

describe('deployment state machine', () => {
  const legal: Record<DeploymentStatus, DeploymentStatus[]> = {
    queued: ['running', 'aborted', 'failed', 'superseded'],
    running: ['succeeded', 'failed', 'aborted'],
    succeeded: [],
    failed: [],
    aborted: [],
    superseded: [],
  };

  it('knows the six statuses', () => {
    expect([...DEPLOYMENT_STATUSES].sort()).toEqual(['aborted', 'failed', 'queued', 'running', 'succeeded', 'superseded']);
  });

  it('isTerminal: succeeded, failed and aborted are final; queued and running are not', () => {
    expect(isTerminal('succeeded')).toBe(true);
    expect(isTerminal('failed')).toBe(true);
    expect(isTerminal('aborted')).toBe(true);
    expect(isTerminal('queued')).toBe(false);
    expect(isTerminal('running')).toBe(false);
  });

  it('isAbortable: only queued and running deployments can be aborted', () => {
    expect(isAbortable('queued')).toBe(true);
    expect(isAbortable('running')).toBe(true);
    expect(isAbortable('succeeded')).toBe(false);
    expect(isAbortable('failed')).toBe(false);
    expect(isAbortable('aborted')).toBe(false);
  });

  it('every abortable status can move to aborted, and no terminal one is abortable', () => {
    for (const status of DEPLOYMENT_STATUSES) {
      if (isAbortable(status)) expect(() => assertTransition(status, 'aborted')).not.toThrow();
      if (isTerminal(status)) expect(isAbortable(status)).toBe(false);
    }
  });

  for (const from of DEPLOYMENT_STATUSES) {
    for (const to of DEPLOYMENT_STATUSES) {
      if (legal[from].includes(to)) {
        it(`allows ${from} -> ${to}`, () => {
          expect(() => assertTransition(from, to)).not.toThrow();
        });
      } else {
        it(`refuses ${from} -> ${to} with a ConflictError`, () => {
          const error = thrown(() => assertTransition(from, to));
          expect(error).toBeInstanceOf(ConflictError);
          expect((error as ConflictError).code).toBe('conflict');
          expect((error as ConflictError).details).toEqual({ from, to });
        });
      }
    }
  }
});

describe('database engines', () => {
  const spec: Record<DatabaseEngine, { port: number; keys: string[] }> = {
    postgres: { port: 5432, keys: ['POSTGRES_DB', 'POSTGRES_USER', 'POSTGRES_PASSWORD'] },
    timescale: { port: 5432, keys: ['POSTGRES_DB', 'POSTGRES_USER', 'POSTGRES_PASSWORD', 'TIMESCALEDB_TELEMETRY'] },
    mysql: { port: 3306, keys: ['MYSQL_DATABASE', 'MYSQL_USER', 'MYSQL_PASSWORD', 'MYSQL_ROOT_PASSWORD'] },
    redis: { port: 6379, keys: ['REDIS_PASSWORD'] },
    mongodb: { port: 27017, keys: ['MONGO_INITDB_ROOT_USERNAME', 'MONGO_INITDB_ROOT_PASSWORD'] },
    clickhouse: { port: 8123, keys: ['CLICKHOUSE_DB', 'CLICKHOUSE_USER', 'CLICKHOUSE_PASSWORD', 'CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT'] },
  };

  it('has exactly the six engines of the spec', () => {
    expect([...DATABASE_ENGINES].sort()).toEqual(Object.keys(spec).sort());
    expect(Object.keys(ENGINE_SPECS).sort()).toEqual(Object.keys(spec).sort());
  });

  it.each(DATABASE_ENGINES.map((e) => [e]))('%s: internal port and initial env keys match the spec', (engine) => {
    expect(ENGINE_SPECS[engine].internalPort).toBe(spec[engine].port);
    expect(ENGINE_SPECS[engine].initialEnv.map((e) => e.key)).toEqual(spec[engine].keys);
  });

  const v = (key: string) => `<${key}>`;
  it.each([
    ['postgres', 'DATABASE_URL', 'postgres://<POSTGRES_USER>:<POSTGRES_PASSWORD>@db:5432/<POSTGRES_DB>'],
    ['timescale', 'DATABASE_URL', 'postgres://<POSTGRES_USER>:<POSTGRES_PASSWORD>@db:5432/<POSTGRES_DB>'],
    ['mysql', 'DATABASE_URL', 'mysql://<MYSQL_USER>:<MYSQL_PASSWORD>@db:3306/<MYSQL_DATABASE>'],
    ['redis', 'REDIS_URL', 'redis://default:<REDIS_PASSWORD>@db:6379/0'],
    ['mongodb', 'MONGO_URL', 'mongodb://<MONGO_INITDB_ROOT_USERNAME>:<MONGO_INITDB_ROOT_PASSWORD>@db:27017/?authSource=admin'],
    ['clickhouse', 'CLICKHOUSE_URL', 'clickhouse://<CLICKHOUSE_USER>:<CLICKHOUSE_PASSWORD>@db:8123/<CLICKHOUSE_DB>'],
  ] as const)('%s connectionUrl and urlKey', (engine, urlKey, url) => {
    expect(ENGINE_SPECS[engine].urlKey).toBe(urlKey);
    expect(ENGINE_SPECS[engine].connectionUrl(v, 'db', ENGINE_SPECS[engine].internalPort)).toBe(url);
  });

  it('connectionUrl only asks for initial env keys of its engine', () => {
    for (const engine of DATABASE_ENGINES) {
      const asked: string[] = [];
      ENGINE_SPECS[engine].connectionUrl((key) => (asked.push(key), 'x'), 'h', 1);
      const keys = ENGINE_SPECS[engine].initialEnv.map((e) => e.key);
      for (const key of asked) expect(keys).toContain(key);
    }
  });

  it('connectionUrl with ${slug.KEY} references resolves to a literal URL', () => {
    const url = ENGINE_SPECS.postgres.connectionUrl((key) => `\${main-db.${key}}`, 'main-db', 5432);
    const env = projectEnv({ 'main-db': { POSTGRES_USER: 'main_db', POSTGRES_PASSWORD: 'pw', POSTGRES_DB: 'main_db' }, web: {} });
    expect(resolveValue(url, env, { serviceSlug: 'web', key: 'DATABASE_URL' })).toMatchObject({
      value: 'postgres://main_db:pw@main-db:5432/main_db',
      problems: [],
    });
  });

  it('generates user and database names from the slug and passwords from the generator', () => {
    const pw = () => 'GENERATED';
    const generated = Object.fromEntries(ENGINE_SPECS.mysql.initialEnv.map((e) => [e.key, e.generate('my-db', pw)]));
    expect(generated).toEqual({
      MYSQL_DATABASE: 'my_db',
      MYSQL_USER: 'my_db',
      MYSQL_PASSWORD: 'GENERATED',
      MYSQL_ROOT_PASSWORD: 'GENERATED',
    });
    expect(ENGINE_SPECS.timescale.initialEnv.find((e) => e.key === 'TIMESCALEDB_TELEMETRY')!.generate('x', pw)).toBe('off');
    expect(ENGINE_SPECS.clickhouse.initialEnv.find((e) => e.key === 'CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT')!.generate('x', pw)).toBe('1');
  });

  it('engineOf / isDatabaseEngine', () => {
    expect(engineOf('database:postgres')).toBe('postgres');
    expect(engineOf('database:clickhouse')).toBe('clickhouse');
    expect(engineOf('database:oracle')).toBeNull();
    expect(engineOf('acme/web')).toBeNull();
    expect(engineOf('image:nginx')).toBeNull();
    expect(engineOf(null)).toBeNull();
    expect(isDatabaseEngine('redis')).toBe(true);
    expect(isDatabaseEngine('Redis')).toBe(false);
  });
});
