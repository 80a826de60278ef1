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
  shellStart,
  type Step,
} from './dockerfile.js';
import { buildStep, describeProject, nodeBuildStage, readNodeProject, type NodeProject } from './node-project.js';

export interface StaticSite {
  /** The folder served, normalised; '' is the root. */
  dir: string;
  /** staticOutput named the folder (rather than an index.html at the root). */
  explicit: boolean;
  /** A front end recognised from package.json: built by its own tool when there is no build script. */
  frontEnd?: { framework: string; label: string; defaultBuild: string; project: NodeProject; notes: string[] };
}

/**
 * Files served by Caddy's file server. When something has to be built first, a Node stage
 * builds it and only the output reaches the Caddy image.
 */
export async function analyzeStatic(ctx: AnalyzerContext, site: StaticSite): Promise<Analysis> {
  const { tree, images, port } = ctx;
  let project = site.frontEnd?.project ?? null;
  if (project === null && site.explicit) {
    const manifest = await tree.read('package.json');
    if (manifest !== null) project = await readNodeProject(ctx, manifest);
  }
  const build = buildStep(ctx, project, site.frontEnd?.defaultBuild ?? null);
  let install: Step | null = null;
  if (ctx.install !== null) install = { command: ctx.install, setting: 'installCommand' };
  else if (project !== null && build !== null) install = inferred(project.pm.install);

  const shown = site.dir === '' ? 'the repository root' : `${site.dir}/`;
  const summary: string[] = [];
  if (site.frontEnd && project)
    summary.push(`${describeProject(site.frontEnd.label, project)}: a static front end, served from ${shown}`, ...site.frontEnd.notes);
  else if (site.explicit)
    summary.push(`Detected a static site in ${shown} (staticOutput)${project && build ? `, built with ${project.pm.name}` : ''}`);
  else summary.push('Detected a static site: index.html at the repository root');

  const stages: string[][] = [];
  let serve: string[];
  if (install !== null || build !== null) {
    if (install !== null && project?.copyAllReason) summary.push(`Copying the whole source before the install: ${project.copyAllReason}`);
    summary.push(describeStep('Install', install), describeStep('Build', build));
    stages.push(nodeBuildStage(ctx, project, install, build));
    serve = [`FROM ${images.static}`, `COPY --from=build ${site.dir === '' ? '/app' : `/app/${site.dir}`} /srv`];
  } else if (site.dir === '') {
    // Serving the root would publish .git (history, and maybe a clone token in .git/config). A
    // throw-away stage drops it, so it is not even in a lower layer of the image.
    stages.push([`FROM ${images.static} AS site`, ...argLines(ctx.buildArgs), 'COPY . /site', 'RUN rm -rf /site/.git']);
    serve = [`FROM ${images.static}`, 'COPY --from=site /site /srv'];
  } else {
    if ((await tree.list(site.dir)).length === 0) {
      throw new AnalyzerError(
        `staticOutput ${JSON.stringify(site.dir)} is not a folder in the repository and nothing builds it: add a build script to package.json or set buildCommand`,
        {
          field: 'staticOutput',
        },
      );
    }
    serve = [`FROM ${images.static}`, ...argLines(ctx.buildArgs), `COPY ${site.dir} /srv`];
  }

  const start =
    ctx.start !== null ? shellStart(ctx.start, true) : execStart('caddy', 'file-server', '--root', '/srv', '--listen', `:${port}`);
  serve.push(`EXPOSE ${port}`, cmdLine(start));
  stages.push(serve);
  summary.push(
    start.fromSetting ? describeStart(start) : `Serve: ${shown} with Caddy's file server on port ${port}`,
    ...describeBuildArgs(ctx.buildArgs),
  );
  const framework = site.frontEnd?.framework ?? 'static';
  return { framework, dockerfile: renderDockerfile(framework, stages), summary };
}
