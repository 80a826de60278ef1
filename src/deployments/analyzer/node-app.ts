import { AnalyzerError, type Analysis, type AnalyzerContext } from './analysis.js';
import {
  cmdLine,
  describeBuildArgs,
  describeStart,
  describeStep,
  execStart,
  renderDockerfile,
  shellStart,
  type Start,
} from './dockerfile.js';
import {
  buildStep,
  COREPACK_ENV,
  describeProject,
  installStep,
  NODE_PATH_ENV,
  nodeBuildStage,
  readNodeProject,
  type NodeProject,
  type PackageJson,
} from './node-project.js';
import type { SourceTree } from './source-tree.js';
import { analyzeStatic } from './static-site.js';

interface NodeFramework {
  id: string;
  label: string;
  uses(pkg: PackageJson): boolean;
  /** The build when package.json has no build script: these cannot start unbuilt. */
  defaultBuild?: string;
  /** A script preferred to `start` (Nest's `start` compiles on every boot, `start:prod` does not). */
  productionScript?: string;
  /** A `start` script that only runs the development server, which is not how to serve production. */
  devStart?: RegExp;
  /** How it starts when package.json does not say. */
  defaultStart?(pkg: PackageJson): Start | null;
  /** Run-stage environment: these servers read HOST or HOSTNAME and would otherwise listen on localhost only. */
  env?: string;
  /**
   * Where its build writes a static site, when it builds one. `always`: even with a start script
   * (`next start` refuses to serve an export); otherwise only without a production start script.
   */
  staticOutput?(tree: SourceTree, pkg: PackageJson): Promise<{ dir: string; always: boolean } | null>;
}

const has =
  (...names: string[]) =>
  (pkg: PackageJson) =>
    names.some((name) => pkg.dependencies.has(name));
const VITE_DEV = /^vite(?:\s+(?:dev|serve)\b|\s+-|\s*$)/;
const NEXT_CONFIGS = ['next.config.js', 'next.config.mjs', 'next.config.cjs', 'next.config.ts', 'next.config.mts'];

async function nextExport(tree: SourceTree): Promise<boolean> {
  for (const file of NEXT_CONFIGS) {
    const text = await tree.read(file);
    if (text !== null) return /\boutput\s*:\s*['"`]export['"`]/.test(text);
  }
  return false;
}

// First match wins: meta-frameworks, then servers, then client-side front ends (Vite with Express is an Express app).
const FRAMEWORKS: NodeFramework[] = [
  {
    id: 'nextjs',
    label: 'Next.js',
    uses: has('next'),
    defaultBuild: 'next build',
    defaultStart: () => shellStart('next start -p $PORT'),
    // Docker sets HOSTNAME to the container id; Next's standalone server would listen on that address only.
    env: 'HOSTNAME=0.0.0.0',
    staticOutput: async (tree) => ((await nextExport(tree)) ? { dir: 'out', always: true } : null),
  },
  {
    id: 'nuxt',
    label: 'Nuxt',
    uses: has('nuxt', 'nuxt3'),
    defaultBuild: 'nuxt build',
    devStart: /^(?:nuxt|nuxi)\s+dev\b/,
    defaultStart: () => execStart('node', '.output/server/index.mjs'),
    env: 'HOST=0.0.0.0',
  },
  { id: 'remix', label: 'Remix', uses: (pkg) => [...pkg.dependencies].some((name) => name.startsWith('@remix-run/')) },
  {
    id: 'sveltekit',
    label: 'SvelteKit',
    uses: has('@sveltejs/kit'),
    defaultBuild: 'vite build',
    devStart: VITE_DEV,
    defaultStart: () => execStart('node', 'build'),
    env: 'HOST=0.0.0.0',
    staticOutput: async (_tree, pkg) => (pkg.dependencies.has('@sveltejs/adapter-static') ? { dir: 'build', always: false } : null),
  },
  {
    id: 'astro',
    label: 'Astro',
    uses: has('astro'),
    defaultBuild: 'astro build',
    devStart: /^astro\s+dev\b/,
    defaultStart: (pkg) => (pkg.dependencies.has('@astrojs/node') ? execStart('node', './dist/server/entry.mjs') : null),
    env: 'HOST=0.0.0.0',
    staticOutput: async (_tree, pkg) => (pkg.dependencies.has('@astrojs/node') ? null : { dir: 'dist', always: false }),
  },
  {
    id: 'gatsby',
    label: 'Gatsby',
    uses: has('gatsby'),
    defaultBuild: 'gatsby build',
    devStart: /^gatsby\s+develop\b/,
    staticOutput: async () => ({ dir: 'public', always: false }),
  },
  { id: 'nestjs', label: 'NestJS', uses: has('@nestjs/core'), productionScript: 'start:prod' },
  { id: 'express', label: 'Express', uses: has('express') },
  { id: 'fastify', label: 'Fastify', uses: has('fastify') },
  { id: 'koa', label: 'Koa', uses: has('koa') },
  {
    id: 'create-react-app',
    label: 'Create React App',
    uses: has('react-scripts'),
    defaultBuild: 'react-scripts build',
    devStart: /^react-scripts\s+start\b/,
    staticOutput: async () => ({ dir: 'build', always: false }),
  },
  {
    id: 'vue',
    label: 'Vue CLI',
    uses: has('@vue/cli-service'),
    defaultBuild: 'vue-cli-service build',
    devStart: /^vue-cli-service\s+serve\b/,
    staticOutput: async () => ({ dir: 'dist', always: false }),
  },
  {
    id: 'vite',
    label: 'Vite',
    uses: has('vite'),
    defaultBuild: 'vite build',
    devStart: VITE_DEV,
    staticOutput: async () => ({ dir: 'dist', always: false }),
  },
];

const PLAIN_NODE: NodeFramework = { id: 'node', label: 'Node.js', uses: () => true };

/**
 * A Node.js project: a build stage installs (dev dependencies included) and builds, and the
 * run stage copies /app. Two stages even without a build step, because build arguments used by
 * RUN steps are recorded in the image history: they stay in the stage that is thrown away.
 */
export async function analyzeNode(ctx: AnalyzerContext, manifest: string): Promise<Analysis> {
  const project = await readNodeProject(ctx, manifest);
  const { pkg, pm } = project;
  const framework = FRAMEWORKS.find((candidate) => candidate.uses(pkg)) ?? PLAIN_NODE;
  const notes: string[] = [];
  const startScript = pkg.scripts.start;
  const devStartScript = startScript !== undefined && framework.devStart?.test(startScript) === true;
  if (devStartScript && ctx.start === null)
    notes.push(`Ignoring the start script ${JSON.stringify(startScript)}: it runs the development server`);

  if (ctx.start === null && framework.staticOutput) {
    const output = await framework.staticOutput(ctx.tree, pkg);
    if (output && (output.always || startScript === undefined || devStartScript)) {
      const frontEnd = {
        framework: framework.id,
        label: framework.label,
        defaultBuild: framework.defaultBuild ?? pm.run('build').join(' '),
        project,
        notes,
      };
      return analyzeStatic(ctx, { dir: output.dir, explicit: false, frontEnd });
    }
  }

  const install = installStep(ctx, project);
  const build = buildStep(ctx, project, framework.defaultBuild ?? null);
  const start = await startOf(ctx, project, framework, devStartScript);
  if (framework.id === 'sveltekit' && !pkg.dependencies.has('@sveltejs/adapter-node')) {
    notes.push('SvelteKit needs @sveltejs/adapter-node to run as a server here (or adapter-static for a static site)');
  }
  if (project.copyAllReason !== null) notes.push(`Copying the whole source before the install: ${project.copyAllReason}`);

  const run = [`FROM ${ctx.images.node}`, 'WORKDIR /app'];
  if (pm.corepack) run.push(COREPACK_ENV, 'COPY --from=build /corepack /corepack', 'RUN corepack enable');
  run.push(NODE_PATH_ENV, `ENV NODE_ENV=production PORT=${ctx.port}${framework.env ? ` ${framework.env}` : ''}`);
  run.push('COPY --from=build /app /app', `EXPOSE ${ctx.port}`, cmdLine(start));

  return {
    framework: framework.id,
    dockerfile: renderDockerfile(framework.id, [nodeBuildStage(ctx, project, install, build), run]),
    summary: [
      describeProject(framework.label, project),
      ...notes,
      describeStep('Install', install),
      describeStep('Build', build),
      describeStart(start),
      ...describeBuildArgs(ctx.buildArgs),
    ],
  };
}

/** startCommand, a production script, the start script, the framework's server, main, then index.js or server.js. */
async function startOf(ctx: AnalyzerContext, project: NodeProject, framework: NodeFramework, devStartScript: boolean): Promise<Start> {
  const { pkg, pm } = project;
  if (ctx.start !== null) return shellStart(ctx.start, true);
  if (framework.productionScript && pkg.scripts[framework.productionScript] !== undefined)
    return execStart(...pm.run(framework.productionScript));
  if (pkg.scripts.start !== undefined && !devStartScript) return execStart(...pm.run('start'));
  const own = framework.defaultStart?.(pkg);
  if (own) return own;
  if (pkg.main !== null) return execStart('node', pkg.main);
  for (const file of ['index.js', 'server.js']) if (await ctx.tree.exists(file)) return execStart('node', file);
  throw new AnalyzerError(
    `Cannot tell how this ${framework.label} app starts: add a start script or main to package.json, or set startCommand`,
    { field: 'startCommand' },
  );
}
