import { DomainError } from '../../domain/errors.js';

/**
 * The analyzer cannot write a Dockerfile for this source: nothing it recognises, a manifest it
 * cannot read, or no way to tell how the app starts. The message says what the user can change.
 * It lives in its own module (re-exported by analyzer.ts) so the rule modules can throw it
 * without importing the module that imports them.
 */
export class AnalyzerError extends DomainError {
  readonly code = 'validation_error' as const;
}
