import { AnalyzerError, NOTHING_RECOGNISED, type Analysis, type AnalyzeInput, type AnalyzerContext } from './analysis.js';
import { PLAIN_PATH } from './dockerfile.js';
import { analyzeGo } from './go-app.js';
import { analyzeNode } from './node-app.js';
import { analyzePython } from './python-app.js';
import { normalizePath, SourceTreeError } from './source-tree.js';
import { analyzeStatic } from './static-site.js';

// Docker's ARG names; anything else could not be declared, and a newline would start a new instruction.
const ARG_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Image references go into FROM lines as they are: no spaces, quotes or line breaks.
const IMAGE_TEXT = /^[A-Za-z0-9._/:@-]+$/;

/**
 * Inspects a source tree and writes a Dockerfile for it. Pure apart from reading the tree: the
 * same tree and settings give the same Dockerfile byte for byte, so Docker's layer cache holds.
 * Rules, first match wins: staticOutput, package.json, requirements.txt/pyproject.toml, go.mod,
 * index.html at the root.
 */
export async function analyze(input: AnalyzeInput): Promise<Analysis> {
  const ctx = contextOf(input);
  const staticOutput = staticOutputOf(input.staticOutput);
  const { tree } = ctx;

  if (staticOutput !== null) return analyzeStatic(ctx, { dir: staticOutput, explicit: true });

  const packageJson = await tree.read('package.json');
  if (packageJson !== null) return analyzeNode(ctx, packageJson);

  const requirements = await tree.read('requirements.txt');
  const pyproject = await tree.read('pyproject.toml');
  if (requirements !== null || pyproject !== null) return analyzePython(ctx, { requirements, pyproject });

  const goMod = await tree.read('go.mod');
  if (goMod !== null) return analyzeGo(ctx, goMod);

  if (await tree.exists('index.html')) return analyzeStatic(ctx, { dir: '', explicit: false });

  throw new AnalyzerError(NOTHING_RECOGNISED);
}

function contextOf(input: AnalyzeInput): AnalyzerContext {
  const port = input.internalPort;
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new AnalyzerError(`internalPort ${port} is not a TCP port (1-65535)`, { field: 'internalPort' });
  for (const key of input.buildEnvKeys) {
    if (!ARG_NAME.test(key))
      throw new AnalyzerError(`Environment key ${JSON.stringify(key)} cannot be a build argument`, { field: 'env', key });
  }
  for (const [name, image] of Object.entries(input.images)) {
    if (!IMAGE_TEXT.test(image))
      throw new AnalyzerError(`Analyzer image ${name} ${JSON.stringify(image)} is not an image reference`, { field: `images.${name}` });
  }
  return {
    tree: input.tree,
    install: blankToNull(input.installCommand),
    build: blankToNull(input.buildCommand),
    start: blankToNull(input.startCommand),
    port,
    // Sorted, so the order env variables were added in does not change the Dockerfile.
    buildArgs: [...new Set(input.buildEnvKeys)].sort(),
    images: { ...input.images },
  };
}

function blankToNull(command: string | null): string | null {
  return command === null || command.trim() === '' ? null : command.trim();
}

/** The folder to serve, relative and normalised ('' for the root); null when staticOutput is unset. */
function staticOutputOf(staticOutput: string | null): string | null {
  if (staticOutput === null || staticOutput.trim() === '') return null;
  let dir: string;
  try {
    dir = normalizePath(staticOutput.trim());
  } catch (error) {
    if (error instanceof SourceTreeError) throw new AnalyzerError(`staticOutput ${error.message}`, { field: 'staticOutput' });
    throw error;
  }
  if (dir !== '' && !PLAIN_PATH.test(dir)) {
    throw new AnalyzerError(`staticOutput ${JSON.stringify(staticOutput)} may only use letters, digits and . _ - @ + /`, {
      field: 'staticOutput',
    });
  }
  return dir;
}
