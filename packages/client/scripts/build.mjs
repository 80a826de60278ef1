// Builds @slipway/client into dist/: ESM JavaScript (esbuild), its .d.ts files (tsc), and the API's
// router type as a declaration of its own (dist/router.d.ts) that needs nothing of the server but
// @trpc/server's types. The router declaration is generated from whatever routers exist at build
// time: tsc writes the app router's inferred type out in full, and every server type it still names
// is written out structurally too, or made opaque when it is server-only (the context, the meta).
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';

const PACKAGE = path.resolve(import.meta.dirname, '..');
const ROOT = path.resolve(PACKAGE, '../..');
const DIST = path.join(PACKAGE, 'dist');
const TSC = path.join(ROOT, 'node_modules/.bin/tsc');
/** What the router's type names that a client never sees: the server's request context and procedure meta. */
const OPAQUE = new Map([[path.join(ROOT, 'routers/trpc'), new Set(['Context', 'SlipwayMeta'])]]);
/** The only packages the published declarations may name. */
const ALLOWED_PACKAGES = /^@trpc\/(client|server)(\/|$)/;

const work = mkdtempSync(path.join(tmpdir(), 'slipway-client-build-'));
try {
  rmSync(DIST, { recursive: true, force: true });
  await bundle();
  declarations();
  check();
} finally {
  rmSync(work, { recursive: true, force: true });
}

async function bundle() {
  const common = { bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', logLevel: 'warning' };
  await build({ ...common, entryPoints: [path.join(PACKAGE, 'src/index.ts')], outfile: path.join(DIST, 'index.js') });
  await build({
    ...common,
    entryPoints: [path.join(PACKAGE, 'src/cli/main.ts')],
    outfile: path.join(DIST, 'cli.js'),
    banner: { js: '#!/usr/bin/env node' },
  });
  chmodSync(path.join(DIST, 'cli.js'), 0o755);
}

/** Runs tsc on these files with the repository's compiler options, writing declarations only; throws on any error. */
function emit(files, outDir) {
  const config = path.join(work, `tsconfig-${path.basename(outDir)}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      extends: path.join(ROOT, 'tsconfig.json'),
      compilerOptions: {
        noEmit: false,
        declaration: true,
        emitDeclarationOnly: true,
        outDir,
        rootDir: '/',
        // The config sits outside the repository: @types/node is found from there.
        typeRoots: [path.join(ROOT, 'node_modules/@types')],
      },
      files,
      include: [],
    }),
  );
  try {
    execFileSync(TSC, ['-p', config], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    throw new Error(`tsc failed while emitting the client's declarations:\n${error.stdout}${error.stderr}`);
  }
  return (file) => path.join(outDir, file.replace(/\.ts$/, '.d.ts'));
}

function declarations() {
  const sources = path.join(PACKAGE, 'src');
  const appRouter = path.join(ROOT, 'routers/app.router.ts');
  const declared = emit([path.join(sources, 'index.ts'), appRouter], path.join(work, 'pass0'));

  // The package's own declarations, but the router: index.d.ts and what it imports.
  for (const name of readdirSync(sources)) {
    if (!name.endsWith('.ts') || name === 'router.ts') continue;
    writeFileSync(path.join(DIST, name.replace(/\.ts$/, '.d.ts')), readFileSync(declared(path.join(sources, name)), 'utf8'));
  }

  const routerText = readFileSync(declared(appRouter), 'utf8');
  const match = /^export declare const appRouter: ([\s\S]*?);\n(?=export |$)/m.exec(routerText);
  if (!match) throw new Error('routers/app.router.d.ts has no `export declare const appRouter`');

  // Server types the router names, by module and name, written out until none is left.
  const types = new Map(); // alias -> declaration text
  const pending = [];
  const aliasOf = new Map(); // `${module}#${name}` -> alias
  const replaceImports = (text, fromDir) =>
    text.replace(/import\("([^"]+)"\)\.(\w+)/g, (whole, specifier, name) => {
      if (!specifier.startsWith('.') && !specifier.startsWith('/')) {
        if (ALLOWED_PACKAGES.test(specifier)) return whole;
        throw new Error(`the router's type names ${name} of the package ${specifier}: the client cannot ship it`);
      }
      const module = path.resolve(fromDir, specifier).replace(/\.js$/, '');
      if (OPAQUE.get(module)?.has(name)) {
        types.set(name, 'object');
        return `Server.${name}`;
      }
      const key = `${module}#${name}`;
      let alias = aliasOf.get(key);
      if (!alias) {
        alias = name;
        for (let n = 2; [...aliasOf.values()].includes(alias); n++) alias = `${name}${n}`;
        aliasOf.set(key, alias);
        pending.push({ module, name, alias });
      }
      return `Server.${alias}`;
    });

  const routerType = replaceImports(match[1], path.dirname(appRouter));
  for (let round = 0; pending.length > 0; round++) {
    if (round === 8) throw new Error(`server types still unresolved after 8 rounds: ${pending.map((p) => p.name).join(', ')}`);
    const batch = pending.splice(0);
    const file = path.join(work, `expand-${round}.ts`);
    writeFileSync(
      file,
      [
        ...batch.map((p, i) => `import type { ${p.name} as I${i} } from '${p.module}.js';`),
        // A mapped type's instance is printed member by member: the server type's shape, not its name.
        'type Expand<T> = T extends object ? { [K in keyof T]: T[K] } : T;',
        'declare function expand<T>(): Expand<T>;',
        ...batch.map((_, i) => `export const E${i} = expand<I${i}>();`),
        '',
      ].join('\n'),
    );
    const text = readFileSync(emit([file], path.join(work, `pass${round + 1}`))(file), 'utf8');
    batch.forEach((p, i) => {
      const found = new RegExp(`^export declare const E${i}: ([\\s\\S]*?);\\n(?=export |$)`, 'm').exec(text);
      if (!found) throw new Error(`could not write out the server type ${p.name}`);
      types.set(p.alias, replaceImports(found[1], work));
    });
  }

  const namespace = [...types].map(([alias, text]) => `    type ${alias} = ${text.replace(/\n/g, '\n    ')};`).join('\n');
  writeFileSync(
    path.join(DIST, 'router.d.ts'),
    [
      "// Generated by scripts/build.mjs from the server's routers at build time: the API as the client sees it.",
      `declare const appRouter: ${routerType};`,
      'export type AppRouter = typeof appRouter;',
      'declare namespace Server {',
      namespace,
      '}',
      'export {};',
      '',
    ].join('\n'),
  );
}

/** The published declarations name only @trpc packages and each other, and type-check as a consumer compiles them (strict, node16). */
function check() {
  for (const name of readdirSync(DIST).filter((n) => n.endsWith('.d.ts'))) {
    const text = readFileSync(path.join(DIST, name), 'utf8');
    for (const [, specifier] of text.matchAll(/(?:from\s+|import\()['"]([^'"]+)['"]/g)) {
      if (specifier.startsWith('./') || ALLOWED_PACKAGES.test(specifier)) continue;
      throw new Error(`dist/${name} names ${specifier}, which the package does not ship`);
    }
  }
  const config = path.join(work, 'tsconfig-check.json');
  mkdirSync(work, { recursive: true });
  writeFileSync(
    config,
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        module: 'node16',
        moduleResolution: 'node16',
        target: 'ES2022',
        // tRPC's own declarations name Disposable and AsyncDisposable.
        lib: ['ES2022', 'DOM', 'ESNext.Disposable'],
        types: [],
        skipLibCheck: false,
      },
      files: [path.join(DIST, 'index.d.ts')],
    }),
  );
  try {
    execFileSync(TSC, ['-p', config], { cwd: PACKAGE, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    throw new Error(`the built declarations do not type-check:\n${error.stdout}${error.stderr}`);
  }
}
