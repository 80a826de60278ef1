import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { api, startArgs } from '../helpers/server-process.js';

/*
 * One smoke run per supported Node major, with the official binary scripts/ensure-node.sh fetches into
 * .node/<major> (once; later runs reuse it): install from the lockfile under that Node (npm ci in a scratch
 * copy), start what `npm start` starts with its own flags, a burst of writes under GC pressure (a smaller
 * young generation and forced collections between requests, see gc-pressure.mjs), then SIGTERM. Any
 * abort, crash or non-zero exit fails it. This is what better-sqlite3 11 failed on Node 24 and 26.
 * The major this run itself is on was installed from the same lockfile by this run (`npm test` installs
 * under it, .ci/run too): its case starts from that install instead of a second identical `npm ci`.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const MAJORS = [22, 24, 26] as const;
const PROJECTS = 12;
/** The major this test run is on. */
const RUN_MAJOR = Number(process.versions.node.split('.')[0]);
const CRASH = /Assertion failed|Aborted|Segmentation fault|SIGABRT|SIGSEGV|FATAL ERROR|core dumped|Could not locate the bindings/;

/** The directory holding the pinned Node of `major`, fetched through the same script `npm start` uses. */
function nodeBin(major: number): string {
  return execFileSync('bash', [path.join(ROOT, 'scripts/ensure-node.sh'), '--major', String(major), '--print-bin'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 180_000,
  }).trim();
}

/**
 * Whether the run's own node_modules came from `npm ci` under this major: npm records the Node it
 * installed with nowhere, but the native addon it fetched is built for one ABI, so better-sqlite3 must
 * load in this very process (the run is on that major).
 */
function installedUnder(major: number): boolean {
  if (major !== RUN_MAJOR) return false;
  try {
    const require = createRequire(path.join(ROOT, 'package.json'));
    const requireOrm = createRequire(require.resolve('@mikro-orm/sqlite'));
    const Database = requireOrm('better-sqlite3') as new (file: string) => { close(): void };
    new Database(':memory:').close();
    return true;
  } catch {
    return false;
  }
}

function run(
  command: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output });
    });
  });
}

describe('supported Node majors: install, start, writes under GC pressure, clean stop', () => {
  // What `npm start` runs after its build (built once here, copied into each scratch install).
  const serverArgs = startArgs();
  const scratchDirs: string[] = [];
  afterAll(() => {
    for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true });
  });

  for (const major of MAJORS) {
    it(`Node ${major}`, { timeout: 420_000 }, async () => {
      const bin = nodeBin(major);
      // The machine's npm runs under this Node (its shebang is `env node`): an install as a user of this major does it.
      const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` };
      delete env.NODE_OPTIONS;
      const version = execFileSync(path.join(bin, 'node'), ['--version'], { encoding: 'utf8' }).trim();
      expect(version.startsWith(`v${major}.`), version).toBe(true);

      const dir = mkdtempSync(path.join(tmpdir(), `slipway-node${major}-`));
      scratchDirs.push(dir);
      for (const file of ['package.json', 'package-lock.json']) cpSync(path.join(ROOT, file), path.join(dir, file));
      cpSync(path.join(ROOT, 'dist'), path.join(dir, 'dist'), { recursive: true });
      if (major === RUN_MAJOR && installedUnder(RUN_MAJOR)) {
        symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
      } else {
        const install = await run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, env, timeoutMs: 300_000 });
        expect(install.code, install.output).toBe(0);
        expect(install.output).not.toMatch(/install-scripts|EBADENGINE/);
      }

      const dataDir = path.join(dir, 'data');
      const token = `boot_${randomBytes(16).toString('hex')}`;
      // The start script's own flags first (they must work on every major), then the test's: later flags win.
      const args = [
        ...serverArgs.slice(0, -1),
        '--expose-gc',
        '--max-semi-space-size=1',
        '--import',
        path.join(ROOT, 'test/helpers/gc-pressure.mjs'),
        serverArgs.at(-1)!,
      ];
      const child = spawn(path.join(bin, 'node'), args, {
        cwd: dir,
        env: {
          ...env,
          HOST: '127.0.0.1',
          PORT: '0',
          DATA_DIR: dataDir,
          BOOTSTRAP_API_KEY: token,
          BUILD_CONCURRENCY: '0',
          PROXY: 'none',
          RATE_LIMIT_PER_MINUTE: '0',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.once('exit', (code, signal) => resolve({ code, signal })),
      );
      try {
        const url = await new Promise<string>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`Node ${major}: no "listening" in 60 s:\n${output}`)), 60_000);
          const onData = () => {
            const match = /"msg":"slipway listening","url":"([^"]+)"/.exec(output);
            if (match) {
              clearTimeout(timer);
              resolve(match[1]!);
            }
          };
          child.stdout.on('data', onData);
          void exited.then(({ code, signal }) =>
            reject(new Error(`Node ${major}: exited (${code ?? signal}) before listening:\n${output}`)),
          );
        });

        const call = api(url, token);
        let writes = 0;
        for (let i = 0; i < PROJECTS; i++) {
          const project = await call('POST', '/api/projects', { name: `Smoke ${i}`, description: 'x'.repeat(2000) });
          expect(project.status, project.text).toBe(201);
          for (const name of ['web', 'api']) {
            const service = await call('POST', `/api/projects/${project.json.project.id}/services`, {
              name,
              repoFullName: `acme/${name}-${i}`,
            });
            expect(service.status, service.text).toBe(201);
            for (let k = 0; k < 3; k++) {
              const envVar = await call('POST', `/api/services/${service.json.service.id}/env`, {
                key: `KEY_${k}`,
                value: randomBytes(64).toString('hex'),
                secret: k === 0,
              });
              expect(envVar.status, envVar.text).toBeLessThan(300);
            }
            writes += 4;
          }
          writes++;
          // Reads in between: statements created, finalized by the forced collections, created again.
          expect((await call('GET', '/api/projects')).status).toBe(200);
        }
        const projects = await call('GET', '/api/projects');
        expect(projects.json.projects).toHaveLength(PROJECTS);
        expect(writes).toBe(PROJECTS * 9);
      } finally {
        if (child.exitCode === null) child.kill('SIGTERM');
      }
      const { code, signal } = await Promise.race([
        exited,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`Node ${major}: no exit 20 s after SIGTERM:\n${output}`)), 20_000),
        ),
      ]);
      expect(output).not.toMatch(CRASH);
      expect({ code, signal }, output).toEqual({ code: 0, signal: null });
      expect(output).toMatch(/"msg":"stopped"/);
      expect(output).toMatch(/gc-pressure: [1-9]\d* forced collections/);
      // The data it wrote is there for the next start.
      expect(readFileSync(path.join(dataDir, 'secret.key'), 'utf8').length).toBeGreaterThanOrEqual(32);
    });
  }
});
