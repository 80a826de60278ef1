import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/** The one-way data flow of docs/architecture.md, checked on every import in the tree. */
const ROOT = path.resolve(import.meta.dirname, '../..');

function filesUnder(dir: string, extensions = ['.ts']): string[] {
  return readdirSync(path.join(ROOT, dir)).flatMap((name) => {
    const rel = path.join(dir, name);
    if (statSync(path.join(ROOT, rel)).isDirectory()) return filesUnder(rel, extensions);
    return extensions.some((ext) => rel.endsWith(ext)) ? [rel] : [];
  });
}

function importsOf(file: string): string[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  return [...text.matchAll(/^\s*(?:import|export)[^'"]*from\s+['"]([^'"]+)['"]/gm)].map((m) => m[1]!);
}

function resolved(file: string, spec: string): string {
  return spec.startsWith('.') ? path.normalize(path.join(path.dirname(file), spec)) : spec;
}

describe('dependency rules', () => {
  it('src never imports routers, adapters, koa, dockerode or tRPC', () => {
    const offending = filesUnder('src').flatMap((file) =>
      importsOf(file)
        .map((spec) => resolved(file, spec))
        .filter((target) => /^(routers|adapters)\//.test(target) || /^(koa|dockerode|@trpc\/)/.test(target))
        .map((target) => `${file} -> ${target}`),
    );
    expect(offending).toEqual([]);
  });

  it('only src/persistence and *.repository.ts files know MikroORM', () => {
    const offending = [...filesUnder('src'), ...filesUnder('routers'), ...filesUnder('adapters')]
      .filter((file) => !file.startsWith('src/persistence/') && !(file.startsWith('src/') && file.endsWith('.repository.ts')))
      .flatMap((file) =>
        importsOf(file)
          .filter((spec) => spec.startsWith('@mikro-orm/'))
          .map((spec) => `${file} -> ${spec}`),
      );
    expect(offending).toEqual([]);
  });

  it('adapters do not import each other: the composition root (adapters/composition) wires them, and the doors (http, cli) start from it', () => {
    const folderOf = (file: string) => (/^adapters\/([^/]+)\//.exec(file) ?? [])[1];
    const offending = filesUnder('adapters').flatMap((file) => {
      const own = folderOf(file);
      if (!own || own === 'composition') return [];
      return importsOf(file)
        .map((spec) => resolved(file, spec))
        .filter((target) => folderOf(target) !== undefined && folderOf(target) !== own)
        .filter((target) => !(folderOf(target) === 'composition' && (own === 'http' || own === 'cli')))
        .map((target) => `${file} -> ${target}`);
    });
    expect(offending).toEqual([]);
  });

  it('routers reach src only through src/index.ts', () => {
    const offending = filesUnder('routers').flatMap((file) =>
      importsOf(file)
        .map((spec) => resolved(file, spec))
        .filter((target) => target.startsWith('src/') && target !== 'src/index.js')
        .map((target) => `${file} -> ${target}`),
    );
    expect(offending).toEqual([]);
  });

  it('the client package imports only its own files, its declared dependencies and Node, and the server only for the router type', () => {
    const dependencies = Object.keys(JSON.parse(readFileSync(path.join(ROOT, 'packages/client/package.json'), 'utf8')).dependencies);
    const offending = filesUnder('packages/client/src').flatMap((file) => {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      return importsOf(file)
        .map((spec) => resolved(file, spec))
        .filter((target) => {
          if (target.startsWith('node:') || target.startsWith('packages/client/src/')) return false;
          if (dependencies.some((dep) => target === dep || target.startsWith(`${dep}/`))) return false;
          // router.ts names the server's AppRouter as a type only; the build replaces it with a generated declaration.
          return !(
            file === 'packages/client/src/router.ts' &&
            target === 'routers/app.router.js' &&
            /export type \{ AppRouter \}/.test(text)
          );
        })
        .map((target) => `${file} -> ${target}`);
    });
    expect(offending).toEqual([]);
  });

  it('the dashboard imports its own files and its declared packages, and of the client its types only: nothing of the server', () => {
    const declared = (file: string) => {
      const pkg = JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));
      return Object.keys({ ...pkg.dependencies, ...pkg.devDependencies });
    };
    const dashboard = declared('packages/dashboard/package.json');
    // The component tests run under the root's vitest.
    const tests = [...dashboard, ...declared('package.json')];
    const offending = filesUnder('packages/dashboard/src', ['.ts', '.tsx']).flatMap((file) => {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      const allowed = /\.test\.tsx?$|test-setup\.ts$/.test(file) ? tests : dashboard;
      return [...text.matchAll(/^\s*(?:import|export)(\s+type\b)?[^'"]*from\s+['"]([^'"]+)['"]/gm)]
        .filter(([, typeOnly, spec]) => {
          const target = resolved(file, spec!);
          if (target.startsWith('packages/dashboard/src/')) return false;
          if (target === '@slipway/client') return !typeOnly;
          return !allowed.some((dep) => target === dep || target.startsWith(`${dep}/`));
        })
        .map(([, , spec]) => `${file} -> ${spec}`);
    });
    expect(offending).toEqual([]);
  });

  it('the domain imports nothing outside itself', () => {
    const offending = filesUnder('src/domain').flatMap((file) =>
      importsOf(file)
        .map((spec) => resolved(file, spec))
        .filter((target) => !target.startsWith('src/domain/') && !target.startsWith('node:'))
        .map((target) => `${file} -> ${target}`),
    );
    expect(offending).toEqual([]);
  });

  it('the barrel src/index.ts holds only exports: the object graph is built in adapters/composition', () => {
    const text = readFileSync(path.join(ROOT, 'src/index.ts'), 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    const statements = text
      .split(';')
      .map((s) => s.trim())
      .filter(Boolean);
    const other = statements.filter((s) => !/^export\s+(type\s+)?(\*|\{[^}]*\})\s+from\s+'[^']+'$/.test(s.replace(/\s+/g, ' ')));
    expect(other).toEqual([]);
  });

  it('no cycle between capabilities: src/<capability> folders import each other one way only', () => {
    // The shared kernel and infrastructure are below every capability; src/persistence groups their repositories.
    const BELOW = new Set(['domain', 'platform', 'persistence']);
    const capabilityOf = (file: string) => (/^src\/([^/]+)\//.exec(file) ?? [])[1];
    const edges = new Map<string, Map<string, string>>();
    for (const file of filesUnder('src')) {
      const from = capabilityOf(file);
      if (!from || BELOW.has(from)) continue;
      for (const target of importsOf(file).map((spec) => resolved(file, spec))) {
        const to = capabilityOf(target);
        if (!to || to === from || BELOW.has(to)) continue;
        if (!edges.has(from)) edges.set(from, new Map());
        if (!edges.get(from)!.has(to)) edges.get(from)!.set(to, `${file} -> ${target}`);
      }
    }
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (node: string, path: string[]) => {
      state.set(node, 'open');
      for (const [next, example] of edges.get(node) ?? []) {
        if (state.get(next) === 'open') cycles.push([...path, `${node} -> ${next} (${example})`].join(', '));
        else if (!state.has(next)) visit(next, [...path, `${node} -> ${next} (${example})`]);
      }
      state.set(node, 'done');
    };
    for (const node of edges.keys()) if (!state.has(node)) visit(node, []);
    expect(cycles).toEqual([]);
  });

  it('src/platform imports no capability: only the domain and the persistence types', () => {
    const offending = filesUnder('src/platform').flatMap((file) =>
      importsOf(file)
        .map((spec) => resolved(file, spec))
        .filter((target) => target.startsWith('src/') && !/^src\/(platform|domain|persistence)\//.test(target))
        .map((target) => `${file} -> ${target}`),
    );
    expect(offending).toEqual([]);
  });
});
