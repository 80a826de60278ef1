import { DomainError } from '../../domain/errors.js';
import type { AnalyzerImages } from '../../platform/platform-config.js';
import type { SourceTree } from './source-tree.js';

/*
 * What the analyzer (analyzer.ts) and its rules per language (node-app.ts, python-app.ts, go-app.ts,
 * static-site.ts) share: the rules import this file, never the analyzer that chooses among them.
 */

export interface AnalyzeInput {
  tree: SourceTree;
  installCommand: string | null;
  buildCommand: string | null;
  startCommand: string | null;
  staticOutput: string | null;
  internalPort: number;
  /** Keys of the service environment; each becomes an ARG so the build can read it. */
  buildEnvKeys: string[];
  images: AnalyzerImages;
}

export interface Analysis {
  framework: string;
  dockerfile: string;
  /** Lines for the deployment log: what was detected and which commands install, build and start it. */
  summary: string[];
}

/** The input once checked: blank commands are null, build argument keys are sorted and unique. */
export interface AnalyzerContext {
  tree: SourceTree;
  install: string | null;
  build: string | null;
  start: string | null;
  port: number;
  buildArgs: readonly string[];
  images: AnalyzerImages;
}

export const NOTHING_RECOGNISED =
  'No Dockerfile and nothing the analyzer recognises: add a package.json, requirements.txt/pyproject.toml, go.mod or index.html, or set buildMethod dockerfile';

/**
 * The analyzer cannot write a Dockerfile for this source: nothing it recognises, a manifest it
 * cannot read, or no way to tell how the app starts. The message says what the user can change.
 */
export class AnalyzerError extends DomainError {
  readonly code = 'validation_error' as const;
}
