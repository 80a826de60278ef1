import { ValidationError } from '../domain/errors.js';

/** The rules of a service's build fields, as creating and changing a service apply them. */

export function blankToNull(value: string | null | undefined): string | null {
  if (value === undefined || value === null) return null;
  const trimmed = value.trim();
  return trimmed === '' ? null : trimmed;
}

/** A path inside the repository: relative, no `..`, normalised without leading `./` or trailing `/`. */
export function relativePath(value: string | null | undefined, field: string): string | null {
  const path = blankToNull(value);
  if (path === null) return null;
  const normalized = path.replace(/^\.\/+/, '').replace(/\/+$/, '');
  if (path.startsWith('/') || normalized.split('/').includes('..') || /[\0\n]/.test(path)) {
    throw new ValidationError(field, `${field} must be a path relative to the repository, without ".."`);
  }
  return normalized === '' || normalized === '.' ? null : normalized;
}

/** Git ref names: no spaces, control characters, `..`, or a leading `-` (it would read as an option). */
export function cleanBranch(branch: string): string {
  const trimmed = branch.trim();
  if (!trimmed || trimmed.startsWith('-') || trimmed.includes('..') || /[\s~^:?*[\\\0]/.test(trimmed) || trimmed.length > 255) {
    throw new ValidationError('branch', `${JSON.stringify(branch)} is not a valid branch name`);
  }
  return trimmed;
}
