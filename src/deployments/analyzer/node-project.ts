import { AnalyzerError, type AnalyzerContext } from './analysis.js';
import { argLines, inferred, runLine, type Step } from './dockerfile.js';
import type { SourceTree } from './source-tree.js';

/** The parts of package.json the analyzer uses. */
export interface PackageJson {
  scripts: Record<string, string>;
  /** dependencies and devDependencies together: both say which framework a project uses. */
  dependencies: Set<string>;
  main: string | null;
  workspaces: boolean;
  /** The package manager's name from the `packageManager` field (`pnpm@9.1.0` gives `pnpm`). */
  packageManager: string | null;
  packageManagerMajor: number | null;
}

export interface PackageManager {
  name: 'npm' | 'yarn' | 'pnpm';
  lockfile: string | null;
  /**
   * Dev dependencies are installed on purpose (build tools live there), with a flag rather than
   * by relying on NODE_ENV: a service whose environment sets NODE_ENV=production passes it as a
   * build argument, and npm, Yarn 1 and pnpm would then skip them.
   */
  install: string;
  /** Yarn and pnpm come from Corepack, which honours the `packageManager` field. */
  corepack: boolean;
  run(script: string): string[];
}

export interface NodeProject {
  pkg: PackageJson;
  pm: PackageManager;
  /** Files copied before the install so its layer survives source edits; null when the install needs the whole tree. */
  installFiles: string[] | null;
  /** Why the whole tree is copied before the install, for the build log. */
  copyAllReason: string | null;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export function parsePackageJson(text: string): PackageJson {
  let raw: unknown;
  try {
    raw = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (error) {
    throw new AnalyzerError(`package.json is not valid JSON: ${(error as Error).message}`, { file: 'package.json' });
  }
  if (!isRecord(raw)) throw new AnalyzerError('package.json must hold a JSON object', { file: 'package.json' });

  const scripts: Record<string, string> = {};
  if (isRecord(raw.scripts)) {
    for (const [name, script] of Object.entries(raw.scripts))
      if (typeof script === 'string' && script.trim() !== '') scripts[name] = script.trim();
  }
  const dependencies = new Set<string>();
  for (const field of ['dependencies', 'devDependencies']) {
    const deps = raw[field];
    if (isRecord(deps)) for (const name of Object.keys(deps)) dependencies.add(name);
  }
  const declared = typeof raw.packageManager === 'string' ? /^(npm|yarn|pnpm)@(\d+)/.exec(raw.packageManager) : null;
  return {
    scripts,
    dependencies,
    main: typeof raw.main === 'string' && raw.main.trim() !== '' ? raw.main.trim() : null,
    workspaces: Array.isArray(raw.workspaces) ? raw.workspaces.length > 0 : isRecord(raw.workspaces),
    packageManager: declared?.[1] ?? null,
    packageManagerMajor: declared ? Number(declared[2]) : null,
  };
}

// Checked in this order; the `packageManager` field breaks a tie when several are committed.
const LOCKFILES = [
  ['package-lock.json', 'npm'],
  ['npm-shrinkwrap.json', 'npm'],
  ['yarn.lock', 'yarn'],
  ['pnpm-lock.yaml', 'pnpm'],
] as const;

export async function detectPackageManager(tree: SourceTree, pkg: PackageJson): Promise<PackageManager> {
  const present: (typeof LOCKFILES)[number][] = [];
  for (const entry of LOCKFILES) if (await tree.exists(entry[0])) present.push(entry);
  const chosen = present.find(([, name]) => name === pkg.packageManager) ?? present[0];

  if (chosen === undefined)
    return { name: 'npm', lockfile: null, install: 'npm install --include=dev', corepack: false, run: npmRun('npm') };
  const [lockfile, name] = chosen;
  switch (name) {
    case 'npm':
      return { name, lockfile, install: 'npm ci --include=dev', corepack: false, run: npmRun('npm') };
    case 'pnpm':
      return { name, lockfile, install: 'pnpm install --frozen-lockfile --prod=false', corepack: true, run: npmRun('pnpm') };
    case 'yarn': {
      // Yarn 2+ reads .yarnrc.yml, refuses --production and renamed --frozen-lockfile to --immutable.
      const berry = (pkg.packageManager === 'yarn' && (pkg.packageManagerMajor ?? 1) >= 2) || (await tree.exists('.yarnrc.yml'));
      const install = berry ? 'yarn install --immutable' : 'yarn install --frozen-lockfile --production=false';
      return { name, lockfile, install, corepack: true, run: npmRun('yarn') };
    }
  }
}

function npmRun(name: 'npm' | 'yarn' | 'pnpm'): (script: string) => string[] {
  return (script) => (script === 'start' ? [name, 'start'] : [name, 'run', script]);
}

// Read by the package manager during the install, so they belong in the install layer.
const INSTALL_CONFIG = ['.npmrc', '.yarnrc', '.yarnrc.yml', '.pnpmfile.cjs'];
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare'];

export async function readNodeProject(ctx: AnalyzerContext, manifest: string): Promise<NodeProject> {
  const { tree } = ctx;
  const pkg = parsePackageJson(manifest);
  const pm = await detectPackageManager(tree, pkg);

  // Copying only the manifests first keeps the install cached across source edits, but an
  // install that runs project scripts (prisma generate, patch-package) or links workspaces
  // needs files we cannot list, so those get the whole tree: slower, never wrong.
  const lifecycle = INSTALL_SCRIPTS.find((name) => pkg.scripts[name] !== undefined);
  let copyAllReason: string | null = null;
  if (ctx.install !== null) copyAllReason = 'installCommand may read any file';
  else if (pkg.workspaces) copyAllReason = 'package.json declares workspaces';
  else if (await tree.exists('pnpm-workspace.yaml')) copyAllReason = 'pnpm-workspace.yaml declares workspaces';
  else if (lifecycle !== undefined) copyAllReason = `package.json has a ${lifecycle} script`;
  else if (await tree.exists('patches')) copyAllReason = 'a patches folder may patch dependencies during the install';

  let installFiles: string[] | null = null;
  if (copyAllReason === null) {
    installFiles = ['package.json'];
    if (pm.lockfile !== null) installFiles.push(pm.lockfile);
    for (const file of INSTALL_CONFIG) if (await tree.exists(file)) installFiles.push(file);
    // Yarn 2+ keeps its own release and plugins under .yarn, named by .yarnrc.yml.
    if (pm.name === 'yarn' && (await tree.exists('.yarn'))) installFiles.push('.yarn');
  }
  return { pkg, pm, installFiles, copyAllReason };
}

export const COREPACK_ENV = 'ENV COREPACK_HOME=/corepack COREPACK_ENABLE_DOWNLOAD_PROMPT=0 COREPACK_DEFAULT_TO_LATEST=0';
// Package binaries (next, vite, tsc) resolve in commands as they do in npm scripts.
export const NODE_PATH_ENV = 'ENV PATH=/app/node_modules/.bin:$PATH';

/**
 * The `build` stage: install, then build, in /app. Build arguments are declared here and nowhere
 * later, so their values stay out of the history of the image that is shipped.
 */
export function nodeBuildStage(ctx: AnalyzerContext, project: NodeProject | null, install: Step | null, build: Step | null): string[] {
  const lines = [`FROM ${ctx.images.node} AS build`, 'WORKDIR /app'];
  // Corepack's home is a fixed folder so the run stage can copy the package manager it downloaded,
  // and it never looks for a newer one, so both stages run the same version without the network.
  if (project?.pm.corepack) lines.push(COREPACK_ENV, 'RUN corepack enable && mkdir -p /corepack');
  lines.push(NODE_PATH_ENV, ...argLines(ctx.buildArgs));

  // NODE_ENV=production once dependencies are in: builds expect it, installs would drop dev tools.
  // A NODE_ENV of the service's own arrives as a build argument and is left alone.
  const nodeEnv = ctx.buildArgs.includes('NODE_ENV') ? [] : ['ENV NODE_ENV=production'];
  const files = project?.installFiles;
  if (install !== null && files) {
    const plain = files.filter((file) => file !== '.yarn');
    lines.push(`COPY ${plain.join(' ')} ./`);
    if (files.includes('.yarn')) lines.push('COPY .yarn ./.yarn');
    lines.push(runLine(install), ...nodeEnv, 'COPY . .');
  } else {
    lines.push('COPY . .');
    if (install !== null) lines.push(runLine(install));
    lines.push(...nodeEnv);
  }
  if (build !== null) lines.push(runLine(build));
  // Checked-out history is no part of the app, and may hold a clone token in .git/config.
  lines.push('RUN rm -rf .git');
  return lines;
}

export function installStep(ctx: AnalyzerContext, project: NodeProject): Step {
  return ctx.install !== null ? { command: ctx.install, setting: 'installCommand' } : inferred(project.pm.install);
}

/** buildCommand, else the `build` script, else the framework's own build when it needs one. */
export function buildStep(ctx: AnalyzerContext, project: NodeProject | null, fallback: string | null): Step | null {
  if (ctx.build !== null) return { command: ctx.build, setting: 'buildCommand' };
  if (project?.pkg.scripts.build !== undefined) return inferred(project.pm.run('build').join(' '));
  return fallback === null ? null : inferred(fallback);
}

export function describeProject(label: string, project: NodeProject): string {
  return `Detected ${label} (${project.pm.name}, ${project.pm.lockfile ?? 'no lockfile'})`;
}
