/** How a cell is shown: NULL, JSON for objects and arrays, text for the rest. */
export function formatCell(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

const TEXTUAL = /char|text|string|uuid|json|enum|citext|name|inet|cidr|xml/i;

/**
 * What an edited cell sends: the text as typed (the engine binds and converts it to the column's
 * type); an emptied non-text cell is NULL, as is the text `NULL` typed in any cell.
 */
export function cellInput(text: string, type: string): unknown {
  if (text === 'NULL') return null;
  if (text === '' && !TEXTUAL.test(type)) return null;
  return text;
}

/** The primary key of a row, by the columns marked primary; null when the table has none (rows cannot be edited then). */
export function primaryKeyOf(
  columns: readonly { name: string; primary: boolean }[],
  row: Record<string, unknown>,
): Record<string, unknown> | null {
  const keys = columns.filter((c) => c.primary);
  if (keys.length === 0) return null;
  return Object.fromEntries(keys.map((c) => [c.name, row[c.name]]));
}

/** The cells that changed, as they will be sent. */
export function changedCells(
  columns: readonly { name: string; type: string }[],
  before: Record<string, unknown>,
  edited: Record<string, string>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of columns) {
    const text = edited[c.name];
    if (text === undefined || text === formatCell(before[c.name])) continue;
    out[c.name] = cellInput(text, c.type);
  }
  return out;
}
