import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TRPCClientError } from '@trpc/client';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EXIT, exitCodeOf, placementOf, service, type Context } from '../../packages/client/src/cli/commands.js';
import { configPath, credentials, readConfig, writeConfig } from '../../packages/client/src/cli/config.js';
import { createOutput, table } from '../../packages/client/src/cli/output.js';
import { SlipwayError, toSlipwayError } from '../../packages/client/src/errors.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('CLI config', () => {
  it('keeps the login in the config dir, readable by the user alone, and lets the environment win', () => {
    const home = mkdtempSync(path.join(tmpdir(), 'slipway-cli-unit-'));
    dirs.push(home);
    const env = { XDG_CONFIG_HOME: home };
    expect(configPath(env)).toBe(path.join(home, 'slipway/config.json'));
    const file = writeConfig({ url: 'http://a', token: 'slw_one' }, env);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ url: 'http://a', token: 'slw_one' });
    expect(readConfig(env)).toEqual({ url: 'http://a', token: 'slw_one' });
    expect(credentials({ ...env, SLIPWAY_TOKEN: 'slw_two' })).toEqual({ url: 'http://a', token: 'slw_two' });
    expect(credentials({ XDG_CONFIG_HOME: path.join(home, 'none') })).toEqual({ url: undefined, token: undefined });
  });
});

describe('CLI output', () => {
  it('pads table columns to the widest cell and says when there is nothing', () => {
    expect(
      table(
        ['NAME', 'ID'],
        [
          ['web', 'a1'],
          ['api-server', null],
        ],
      ),
    ).toBe('NAME        ID\nweb         a1\napi-server  -');
    expect(table(['NAME'], [], 'No projects')).toBe('No projects');
  });

  it('prints nothing but JSON on stdout with --json, and no spinner off a terminal', () => {
    const written: Record<string, string> = { out: '', err: '' };
    const stream = (key: string, isTTY: boolean) => ({ isTTY, write: (s: string) => ((written[key] += s), true) }) as never;
    const json = createOutput(true, stream('out', false), stream('err', true));
    json.note('hello');
    json.progress('waiting').done();
    json.event({ type: 'log', line: 'x' }, 'x');
    json.result({ a: 1 }, () => 'human');
    expect(written.err).toBe('');
    expect(written.out).toBe('{"type":"log","line":"x"}\n{\n  "a": 1\n}\n');

    written.out = written.err = '';
    const plain = createOutput(false, stream('out', false), stream('err', false));
    const progress = plain.progress('waiting');
    progress.update('still waiting');
    progress.done();
    expect(written.err).toBe('waiting\n');
  });
});

describe('SlipwayError', () => {
  it("carries the API's code, status and details, and stays a TRPCClientError", () => {
    const trpc = TRPCClientError.from({
      error: {
        code: -32600,
        message: 'name: unknown field',
        data: { error: 'validation_error', message: 'name: unknown field', details: { field: 'name' }, httpStatus: 400 },
      },
    });
    const error = toSlipwayError(trpc);
    expect(error).toBeInstanceOf(SlipwayError);
    expect(error).toBeInstanceOf(TRPCClientError);
    expect(error).toMatchObject({ name: 'SlipwayError', code: 'validation_error', status: 400, details: { field: 'name' } });
    expect(error.data).toMatchObject({ error: 'validation_error' });
    expect(toSlipwayError(error)).toBe(error);
    expect(toSlipwayError(new TypeError('fetch failed'))).toMatchObject({ code: 'network_error', status: 0 });
    expect(toSlipwayError(new TypeError('x'), AbortSignal.abort())).toMatchObject({ code: 'aborted', status: 0 });
  });

  it('gives each kind of failure its own exit code', () => {
    const of = (code: string) => exitCodeOf(new SlipwayError('m', { code, status: 0 }));
    expect([of('unauthorized'), of('forbidden'), of('not_found'), of('conflict'), of('network_error')]).toEqual([
      EXIT.auth,
      EXIT.auth,
      EXIT.notFound,
      EXIT.api,
      EXIT.network,
    ]);
    expect(new Set(Object.values(EXIT)).size).toBe(Object.keys(EXIT).length);
  });
});

describe('CLI service create and update: replicas and placement', () => {
  /** A stand-in for the API's tRPC endpoint: answers projects.list and records each write's input. */
  async function fakeApi() {
    const writes: Array<{ path: string; input: unknown }> = [];
    const service = { id: 'svc1', slug: 'web', name: 'web' };
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        const path = new URL(req.url ?? '/', 'http://x').pathname.replace(/^\/trpc\//, '');
        const answer = (data: unknown) => {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify([{ result: { data: { json: data } } }]));
        };
        if (path === 'projects.list')
          return answer({ projects: [{ id: 'p1', slug: 'shop', name: 'shop', services: [service] }], nextCursor: null });
        const input = (JSON.parse(body) as Record<string, { json: Record<string, unknown> }>)['0']!.json;
        writes.push({ path, input });
        answer({ service: { ...service, replicas: input.replicas ?? 1, placement: input.placement ?? null } });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { writes, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
  }

  function context(url: string, flags: Partial<Context['flags']>): { ctx: Context; printed: string[] } {
    const printed: string[] = [];
    const out = { ...createOutput(false), result: (_value: unknown, human: () => string) => void printed.push(human()) };
    const ctx: Context = {
      out,
      signal: AbortSignal.timeout(10_000),
      env: { SLIPWAY_URL: url, SLIPWAY_TOKEN: 'slw_test', XDG_CONFIG_HOME: tmpdir() },
      flags: { follow: false, secret: false, ...flags },
    };
    return { ctx, printed };
  }

  it('sends the placement the flags name on create and update, and clears it with --anywhere', async () => {
    const api = await fakeApi();
    try {
      const create = context(api.url, {
        image: 'busybox:1',
        replicas: '3',
        must: ['zone=eu', 'disk=ssd'],
        mustNot: ['gpu=none'],
        role: 'worker',
      });
      expect(await service(create.ctx, ['create', 'shop', 'web'])).toBe(EXIT.ok);
      const update = context(api.url, { replicas: '2', role: 'any' });
      expect(await service(update.ctx, ['update', 'shop/web'])).toBe(EXIT.ok);
      const clear = context(api.url, { anywhere: true });
      expect(await service(clear.ctx, ['update', 'web'])).toBe(EXIT.ok);
      expect(api.writes).toEqual([
        {
          path: 'services.create',
          input: {
            projectId: 'p1',
            name: 'web',
            repoUrl: 'container-image',
            containerImage: 'busybox:1',
            replicas: 3,
            placement: { must: { zone: 'eu', disk: 'ssd' }, mustNot: { gpu: 'none' }, role: 'worker' },
          },
        },
        { path: 'services.update', input: { serviceId: 'svc1', replicas: 2, placement: { must: {}, mustNot: {}, role: null } } },
        { path: 'services.update', input: { serviceId: 'svc1', placement: null } },
      ]);
      expect(create.printed).toEqual(['Created web (svc1), on servers with zone=eu, disk=ssd, gpu!=none, role=worker']);
      expect(clear.printed).toEqual(['Updated web: 1 replica(s), anywhere']);
    } finally {
      await api.close();
    }
  });

  it('refuses bad placement flags before calling the API', () => {
    const flags = (f: Partial<Context['flags']>) => ({ follow: false, secret: false, ...f });
    expect(() => placementOf(flags({ must: ['zone'] }))).toThrow(/--must takes key=value/);
    expect(() => placementOf(flags({ role: 'leader' }))).toThrow(/--role must be manager, worker or any/);
    expect(() => placementOf(flags({ anywhere: true, role: 'worker' }))).toThrow(/--anywhere clears the placement/);
    expect(placementOf(flags({}))).toBeUndefined();
  });
});
