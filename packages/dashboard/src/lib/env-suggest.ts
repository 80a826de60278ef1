/**
 * `${slug.KEY}` references in a variable's value: while the text before the cursor has an open `${`,
 * the editor offers the keys that match what was typed after it, and choosing one closes the reference.
 */
export interface OpenReference {
  /** Index of the `$` that opens the reference. */
  start: number;
  /** What was typed after `${` so far. */
  query: string;
}

/** The reference being typed at the cursor, or null. A `}` or whitespace after `${` ends it. */
export function openReference(value: string, cursor: number): OpenReference | null {
  const before = value.slice(0, cursor);
  const start = before.lastIndexOf('${');
  if (start === -1) return null;
  const query = before.slice(start + 2);
  if (/[}\s]/.test(query)) return null;
  return { start, query };
}

/** Keys matching the query: prefix matches first, then those containing it; case-insensitive; at most `limit`. */
export function matchSuggestions<T extends { key: string }>(items: readonly T[], query: string, limit = 50): T[] {
  const q = query.toLowerCase();
  const seen = new Set<string>();
  const unique = items.filter((i) => {
    if (seen.has(i.key)) return false;
    seen.add(i.key);
    return true;
  });
  const prefix = unique.filter((i) => i.key.toLowerCase().startsWith(q));
  const inside = unique.filter((i) => !i.key.toLowerCase().startsWith(q) && i.key.toLowerCase().includes(q));
  return [...prefix, ...inside].slice(0, limit);
}

/** The value with the open reference replaced by `${key}`, and where the cursor goes after it. */
export function applySuggestion(value: string, cursor: number, ref: OpenReference, key: string): { value: string; cursor: number } {
  const insert = `\${${key}}`;
  // A `}` right after the cursor already closes the reference: do not double it.
  const after = value.slice(cursor).startsWith('}') ? value.slice(cursor + 1) : value.slice(cursor);
  const next = value.slice(0, ref.start) + insert + after;
  return { value: next, cursor: ref.start + insert.length };
}

/** The references a value holds: `${web.PORT}` -> ['web.PORT']. */
export function referencesIn(value: string): string[] {
  return [...value.matchAll(/\$\{([^}\s]+)\}/g)].map((m) => m[1]!);
}

/** Variable keys the platform accepts (spec: ^[A-Z_][A-Z0-9_]*$). */
export const ENV_KEY = /^[A-Z_][A-Z0-9_]*$/;
