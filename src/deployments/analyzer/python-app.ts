import { AnalyzerError, type Analysis, type AnalyzerContext } from './analysis.js';
import {
  argLines,
  cmdLine,
  describeBuildArgs,
  describeStart,
  describeStep,
  execStart,
  inferred,
  renderDockerfile,
  runLine,
  shellStart,
  type Start,
  type Step,
} from './dockerfile.js';
import { normalizePath, type SourceTree } from './source-tree.js';

export interface PythonManifests {
  requirements: string | null;
  pyproject: string | null;
}

type PythonFramework = 'django' | 'fastapi' | 'flask' | 'python';
const LABELS: Record<PythonFramework, string> = { django: 'Django', fastapi: 'FastAPI', flask: 'Flask', python: 'Python' };

/** PEP 503 normalised name of one requirement line: `Flask_SQLAlchemy[async]>=3` gives `flask-sqlalchemy`. */
export function requirementName(spec: string): string | null {
  const match = /^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)/.exec(spec);
  return match ? match[1]!.toLowerCase().replace(/[-_.]+/g, '-') : null;
}

interface Requirements {
  names: Set<string>;
  /** The file points at other files or local paths, so pip needs more than requirements.txt. */
  local: boolean;
}

const INCLUDE = /^(?:-r|--requirement)\s*=?\s*(\S+)/;
const LOCAL_OPTION = /^(?:-c|--constraint|-e|--editable|-f|--find-links)\b/;

/** Names listed in a requirements file, following `-r` includes inside the tree. */
async function readRequirements(tree: SourceTree, file: string, text: string, into: Requirements, seen: Set<string>): Promise<void> {
  seen.add(file);
  for (const raw of text.replace(/\\\r?\n/g, ' ').split(/\r?\n/)) {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (line === '') continue;
    const include = INCLUDE.exec(line);
    if (include) {
      into.local = true;
      const dir = file.includes('/') ? file.slice(0, file.lastIndexOf('/')) : '';
      let target: string;
      try {
        target = normalizePath(dir === '' ? include[1]! : `${dir}/${include[1]!}`);
      } catch {
        continue; // An include outside the tree: pip will say so during the build.
      }
      const included = seen.has(target) || seen.size > 16 ? null : await tree.read(target);
      if (included !== null) await readRequirements(tree, target, included, into, seen);
      continue;
    }
    if (LOCAL_OPTION.test(line) || /^[./]|^file:|@\s*file:/.test(line)) into.local = true;
    if (line.startsWith('-') || /^[./]/.test(line)) continue;
    const name = requirementName(line);
    if (name !== null) into.names.add(name);
  }
}

/** Dependency names of pyproject.toml: PEP 621 `dependencies = [...]` and Poetry's dependency tables. */
export function pyprojectNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const match of text.matchAll(/^\s*dependencies\s*=\s*\[/gm)) {
    // Walk the array string by string: extras like "uvicorn[standard]" hold brackets of their own.
    let i = match.index + match[0].length;
    while (i < text.length) {
      const ch = text[i]!;
      if (ch === ']') break;
      if (ch === '#') {
        const end = text.indexOf('\n', i);
        i = end === -1 ? text.length : end;
        continue;
      }
      if (ch === '"' || ch === "'") {
        const end = text.indexOf(ch, i + 1);
        if (end === -1) break;
        const name = requirementName(text.slice(i + 1, end));
        if (name !== null) names.add(name);
        i = end + 1;
        continue;
      }
      i++;
    }
  }
  for (const table of text.matchAll(/^\[tool\.poetry(?:\.group\.[^\]]+)?\.dependencies\][^\n]*\n([\s\S]*?)(?=^\s*\[|(?![\s\S]))/gm)) {
    for (const key of table[1]!.matchAll(/^\s*["']?([A-Za-z0-9][A-Za-z0-9._-]*)["']?\s*=/gm)) {
      const name = requirementName(key[1]!);
      if (name !== null && name !== 'python') names.add(name);
    }
  }
  return names;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Bounds the work on a repository with many Python files at the top.
const MAX_SCANNED_FILES = 50;

/** Python files that may create the app, likeliest first: main.py and app.py, the rest of the root, then app/ and src/. */
async function candidateModules(tree: SourceTree): Promise<string[]> {
  const files: string[] = [];
  for (const dir of ['', 'app', 'src']) {
    // A root __init__.py belongs to no importable package; app/__init__.py is the package `app`.
    const names = (await tree.list(dir)).filter(
      (name) => name.endsWith('.py') && IDENTIFIER.test(name.slice(0, -3)) && !(dir === '' && name === '__init__.py'),
    );
    const first = ['main.py', 'app.py', '__init__.py'].filter((name) => names.includes(name));
    for (const name of [...first, ...names.filter((n) => !first.includes(n))]) files.push(dir === '' ? name : `${dir}/${name}`);
  }
  return files.slice(0, MAX_SCANNED_FILES);
}

/** The import path of a module file: `app/main.py` is `app.main`, `app/__init__.py` is `app`. */
const moduleOf = (file: string) => file.replace(/(?:\/__init__)?\.py$/, '').replace(/\//g, '.');

/** `module:variable` of the file that creates `new <className>(`, e.g. `main:app`; the fallback when none does. */
async function appTarget(tree: SourceTree, className: 'FastAPI' | 'Flask', fallbackModule: string): Promise<string> {
  const creates = new RegExp(`\\b${className}\\s*\\(`);
  const assignment = new RegExp(`^([A-Za-z_]\\w*)\\s*(?::[^=\\n]*)?=\\s*(?:[A-Za-z_][\\w.]*\\.)?${className}\\s*\\(`, 'm');
  for (const file of await candidateModules(tree)) {
    const text = await tree.read(file);
    if (text === null || !creates.test(text)) continue;
    return `${moduleOf(file)}:${assignment.exec(text)?.[1] ?? 'app'}`;
  }
  return `${fallbackModule}:app`;
}

/** The Django project package: the folder holding wsgi.py, the one manage.py names when there are several. */
async function djangoProject(tree: SourceTree): Promise<string | null> {
  const manage = await tree.read('manage.py');
  const named = manage === null ? undefined : /DJANGO_SETTINGS_MODULE['"]\s*,\s*['"]([A-Za-z_]\w*)\./.exec(manage)?.[1];
  const withWsgi: string[] = [];
  for (const entry of await tree.list('')) {
    const dir = entry.slice(0, -1);
    if (entry.endsWith('/') && IDENTIFIER.test(dir) && (await tree.exists(`${dir}/wsgi.py`))) withWsgi.push(dir);
  }
  return named !== undefined && withWsgi.includes(named) ? named : (withWsgi[0] ?? null);
}

interface PythonStart {
  start: Start;
  /** The server the start command runs, when the analyzer chose it. */
  server: 'gunicorn' | 'uvicorn' | null;
}

async function startOf(ctx: AnalyzerContext, framework: PythonFramework): Promise<PythonStart> {
  const { tree } = ctx;
  if (ctx.start !== null) return { start: shellStart(ctx.start, true), server: null };
  switch (framework) {
    case 'django': {
      const project = await djangoProject(tree);
      if (project === null)
        throw new AnalyzerError('Django detected but no <project>/wsgi.py at the root: set startCommand', { field: 'startCommand' });
      return { start: shellStart(`gunicorn ${project}.wsgi:application --bind 0.0.0.0:$PORT`), server: 'gunicorn' };
    }
    case 'fastapi':
      return { start: shellStart(`uvicorn ${await appTarget(tree, 'FastAPI', 'main')} --host 0.0.0.0 --port $PORT`), server: 'uvicorn' };
    case 'flask':
      return { start: shellStart(`gunicorn ${await appTarget(tree, 'Flask', 'app')} --bind 0.0.0.0:$PORT`), server: 'gunicorn' };
    case 'python':
      for (const file of ['main.py', 'app.py']) if (await tree.exists(file)) return { start: execStart('python', file), server: null };
      throw new AnalyzerError('Cannot tell how this Python app starts: add main.py or app.py, or set startCommand', {
        field: 'startCommand',
      });
  }
}

const PIP_ENV = 'ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1';

/**
 * A Python app: dependencies go into a virtualenv at /venv in a build stage, and the run stage
 * copies /venv and /app from the same base image, so the build arguments stay behind.
 */
export async function analyzePython(ctx: AnalyzerContext, manifests: PythonManifests): Promise<Analysis> {
  const { tree } = ctx;
  const requirements: Requirements = { names: new Set(), local: false };
  if (manifests.requirements !== null) await readRequirements(tree, 'requirements.txt', manifests.requirements, requirements, new Set());
  const dependencies = new Set([...requirements.names, ...(manifests.pyproject === null ? [] : pyprojectNames(manifests.pyproject))]);
  const framework: PythonFramework = (['django', 'fastapi', 'flask'] as const).find((name) => dependencies.has(name)) ?? 'python';

  const { start, server } = await startOf(ctx, framework);
  const missingServer = server !== null && !dependencies.has(server) ? server : null;
  const manifest = manifests.requirements !== null ? 'requirements.txt' : 'pyproject.toml';
  const summary = [`Detected ${LABELS[framework]} (pip, ${manifest})`];

  const installSteps: Step[] = [];
  let copyAllReason: string | null = null;
  if (ctx.install !== null) {
    installSteps.push({ command: ctx.install, setting: 'installCommand' });
    // A no-op when the custom install brought it already.
    if (missingServer !== null) installSteps.push(inferred(`pip install ${missingServer}`));
    copyAllReason = 'installCommand may read any file';
  } else {
    const extra = missingServer === null ? '' : ` ${missingServer}`;
    installSteps.push(inferred(manifests.requirements !== null ? `pip install -r requirements.txt${extra}` : `pip install .${extra}`));
    if (manifests.requirements === null) copyAllReason = 'pip install . builds the project from its source';
    else if (requirements.local) copyAllReason = 'requirements.txt refers to other files';
  }
  if (missingServer !== null) summary.push(`Added ${missingServer} to the install: the start command needs it`);
  if (copyAllReason !== null) summary.push(`Copying the whole source before the install: ${copyAllReason}`);
  const build: Step | null = ctx.build === null ? null : { command: ctx.build, setting: 'buildCommand' };

  const buildStage = [
    `FROM ${ctx.images.python} AS build`,
    'WORKDIR /app',
    PIP_ENV,
    'RUN python3 -m venv /venv',
    'ENV PATH=/venv/bin:$PATH',
    ...argLines(ctx.buildArgs),
  ];
  if (copyAllReason === null) buildStage.push('COPY requirements.txt ./', ...installSteps.map(runLine), 'COPY . .');
  else buildStage.push('COPY . .', ...installSteps.map(runLine));
  if (build !== null) buildStage.push(runLine(build));
  buildStage.push('RUN rm -rf .git');

  const run = [
    `FROM ${ctx.images.python}`,
    'WORKDIR /app',
    // Unbuffered, so log lines reach the runtime log as they are written.
    `ENV PATH=/venv/bin:$PATH PYTHONUNBUFFERED=1 PORT=${ctx.port}`,
    'COPY --from=build /venv /venv',
    'COPY --from=build /app /app',
    `EXPOSE ${ctx.port}`,
    cmdLine(start),
  ];

  summary.push(
    ...installSteps.map((step) => describeStep('Install', step)),
    describeStep('Build', build),
    describeStart(start),
    ...describeBuildArgs(ctx.buildArgs),
  );
  return { framework, dockerfile: renderDockerfile(framework, [buildStage, run]), summary };
}
