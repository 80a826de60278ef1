import { z } from 'zod';
import { DATABASE_ENGINES } from '../domain/database-engines.js';

/** The spec's Databases shapes (Table entry, Column, rows), as the routers answer them. */
const engine = z.enum(DATABASE_ENGINES);
/**
 * Rows: each cells by column name, each JSON's own value or the documented string form of what JSON
 * cannot carry (docs/decisions.md). The adapters build rows, so at run time each row is only checked to
 * be an object: validating a page's cells one by one (and copying them) cost more than reading the page,
 * and so did a zod check per row (z.array of a custom check allocated about 130 KB for a page of 500
 * rows, on a server whose young generation is 2 MB: docs/performance.md, session 11). One check of the
 * whole array; the document shows the schema `z.array(z.record(z.string(), z.unknown()))` would.
 */
const isRow = (value: unknown): boolean => typeof value === 'object' && value !== null && !Array.isArray(value);
const rows = z
  .custom<Array<Record<string, unknown>>>((value) => Array.isArray(value) && value.every(isRow))
  .meta({ override: { type: 'array', items: { type: 'object', propertyNames: { type: 'string' }, additionalProperties: {} } } });

/**
 * A page of rows (GET rows): `limit` from 1 to `max`, `default` when not given. The one bound of a page:
 * the router takes it from here, and every adapter checks the same (a page is held in memory whole).
 */
export const ROWS_PAGE_LIMIT = { max: 500, default: 50 } as const;

export const tableEntryView = z.object({
  id: z.string().meta({ description: '`<schema>.<name>`: the table is named by splitting at the first dot' }),
  name: z.string(),
  schema: z.string(),
  rowCount: z.number().int(),
});

export const columnView = z.object({
  name: z.string(),
  type: z.string().meta({ description: "The engine's own type name" }),
  primary: z.boolean(),
});

export const tablesView = z.object({ engine, tables: z.array(tableEntryView) });

export const rowsView = z.object({
  engine,
  table: z.string(),
  columns: z.array(columnView),
  rows,
  limit: z.number().int(),
  offset: z.number().int(),
  total: z.number().int(),
});

/** A column of a statement's result: its name (made unique) and the engine's type name. */
export const resultColumnView = z.object({ name: z.string(), type: z.string() });

export const queryResultView = z.object({
  columns: z.array(resultColumnView),
  rows,
  rowCount: z.number().int().meta({ description: 'Rows returned (at most the row cap)' }),
  truncated: z.boolean().meta({ description: 'True when the result had more rows than the cap and was cut' }),
});

export const insertedRowView = z.object({ ok: z.literal(true), table: z.string(), id: z.unknown() });

/** The port's shapes (database-admin.port.ts) are these views' types: each declared once, here. */
export type TableEntry = z.infer<typeof tableEntryView>;
export type ColumnInfo = z.infer<typeof columnView>;
export type TablesView = z.infer<typeof tablesView>;
export type RowsView = z.infer<typeof rowsView>;
export type QueryResultView = z.infer<typeof queryResultView>;
