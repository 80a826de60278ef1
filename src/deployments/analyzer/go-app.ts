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
  shellWord,
  type Step,
} from './dockerfile.js';
import type { SourceTree } from './source-tree.js';

const FRAMEWORKS = [
  { id: 'gin', label: 'Gin', module: /^github\.com\/gin-gonic\/gin$/ },
  { id: 'echo', label: 'Echo', module: /^github\.com\/labstack\/echo(?:\/v\d+)?$/ },
  { id: 'fiber', label: 'Fiber', module: /^github\.com\/gofiber\/fiber(?:\/v\d+)?$/ },
];

/** Module paths go.mod requires, in either the one-line or the block form. */
export function goRequires(goMod: string): string[] {
  const required: string[] = [];
  let inBlock = false;
  for (const raw of goMod.split(/\r?\n/)) {
    const line = raw.replace(/\/\/.*$/, '').trim();
    if (inBlock) {
      if (line === ')') inBlock = false;
      else if (line !== '') required.push(line.split(/\s+/)[0]!);
    } else if (/^require\s*\($/.test(line)) inBlock = true;
    else {
      const single = /^require\s+(\S+)\s/.exec(line);
      if (single) required.push(single[1]!);
    }
  }
  return required;
}

/** The package to build: the root when it is package main, else the one folder under cmd/. */
async function mainPackage(tree: SourceTree, modulePath: string | null): Promise<string> {
  const goFiles = (await tree.list('')).filter((name) => name.endsWith('.go') && !name.endsWith('_test.go'));
  for (const file of goFiles.slice(0, 50)) {
    const text = await tree.read(file);
    if (text !== null && /^\s*package\s+main\b/m.test(text)) return '.';
  }
  const commands = (await tree.list('cmd')).filter((name) => name.endsWith('/')).map((name) => name.slice(0, -1));
  if (commands.length === 1) return `./cmd/${commands[0]!}`;
  // Several commands: the one named like the module (github.com/acme/api and cmd/api) is the service.
  const moduleName = modulePath
    ?.replace(/\/v\d+$/, '')
    .split('/')
    .pop();
  if (moduleName !== undefined && commands.includes(moduleName)) return `./cmd/${moduleName}`;
  if (commands.length > 1) {
    throw new AnalyzerError(
      `Several commands under cmd/ (${commands.join(', ')}): set buildCommand to build one into /out/app, e.g. CGO_ENABLED=0 go build -o /out/app ./cmd/${commands[0]!}`,
      {
        field: 'buildCommand',
      },
    );
  }
  throw new AnalyzerError('No main package at the root or under cmd/: set buildCommand to build the binary into /out/app', {
    field: 'buildCommand',
  });
}

/**
 * A Go module: compiled in the Go image, run on a plain Debian. A buildCommand must leave its
 * binary at /out/app, as the inferred build does.
 */
export async function analyzeGo(ctx: AnalyzerContext, goMod: string): Promise<Analysis> {
  const { tree } = ctx;
  const modulePath = /^\s*module\s+"?([^\s"]+)"?/m.exec(goMod)?.[1] ?? null;
  const requires = goRequires(goMod);
  const framework = FRAMEWORKS.find((candidate) => requires.some((path) => candidate.module.test(path))) ?? { id: 'go', label: 'Go' };
  const hasSum = await tree.exists('go.sum');
  // With vendor/modules.txt the build reads vendor/ and never the module cache.
  const vendored = await tree.exists('vendor/modules.txt');

  const customInstall: Step | null = ctx.install === null ? null : { command: ctx.install, setting: 'installCommand' };
  const install = customInstall ?? (hasSum && !vendored ? inferred('go mod download') : null);
  const build: Step =
    ctx.build !== null
      ? { command: ctx.build, setting: 'buildCommand' }
      : inferred(`CGO_ENABLED=0 go build -o /out/app ${shellWord(await mainPackage(tree, modulePath))}`);
  const start = ctx.start !== null ? shellStart(ctx.start, true) : execStart('/usr/local/bin/app');

  const buildStage = [`FROM ${ctx.images.go} AS build`, 'WORKDIR /src', ...argLines(ctx.buildArgs)];
  // Only the inferred download can run on go.mod and go.sum alone.
  if (customInstall !== null) buildStage.push('COPY . .', runLine(customInstall));
  else {
    buildStage.push(`COPY ${hasSum ? 'go.mod go.sum' : 'go.mod'} ./`);
    if (install !== null) buildStage.push(runLine(install));
    buildStage.push('COPY . .');
  }
  buildStage.push(runLine(build), 'RUN rm -rf .git');

  const run = [
    `FROM ${ctx.images.goRuntime}`,
    'WORKDIR /app',
    `ENV PORT=${ctx.port}`,
    // The slim runtime has no CA bundle; the Go image's lets the app call HTTPS services.
    'COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt',
    // The source comes along for templates, static files and migrations read at run time.
    'COPY --from=build /src /app',
    'COPY --from=build /out/app /usr/local/bin/app',
    `EXPOSE ${ctx.port}`,
    cmdLine(start),
  ];

  const summary = [`Detected ${framework.label} (Go module ${modulePath ?? 'without a module path'})`];
  if (customInstall !== null) summary.push('Copying the whole source before the install: installCommand may read any file');
  summary.push(describeStep('Install', install), describeStep('Build', build), describeStart(start), ...describeBuildArgs(ctx.buildArgs));
  return { framework: framework.id, dockerfile: renderDockerfile(framework.id, [buildStage, run]), summary };
}
