import { z } from 'zod';
import { DATABASE_ENGINES } from '../domain/database-engines.js';
import { IMPORT_SOURCES, IMPORT_STATUSES, type DatabaseImportLogRecord, type DatabaseImportRecord } from '../domain/database-imports.js';
import { LOG_STREAMS } from '../domain/types.js';

/** The spec's Import shape and the answers of the imports endpoints. */
const timestamp = z.string().meta({ description: 'ISO 8601 UTC timestamp with milliseconds', example: '2026-11-21T12:00:00.000Z' });

export const importView = z
  .object({
    id: z.string(),
    serviceId: z.string(),
    engine: z.enum(DATABASE_ENGINES),
    source: z.enum(IMPORT_SOURCES),
    sourceLabel: z.string().meta({ description: '`host:port/database` of the source: never its user or password' }),
    status: z.enum(IMPORT_STATUSES),
    error: z.string().nullable().meta({ description: 'Why it failed (null unless `failed`)' }),
    createdAt: timestamp,
    startedAt: timestamp.nullable(),
    finishedAt: timestamp.nullable(),
  })
  .meta({ id: 'DatabaseImport' });

export const importsView = z.object({ imports: z.array(importView) });

export const importStartedView = z.object({
  result: z.object({ id: z.string(), status: z.enum(IMPORT_STATUSES), source: z.enum(IMPORT_SOURCES), createdAt: timestamp }),
});

export const importLogsView = z.object({
  logs: z.array(z.object({ id: z.number().int(), line: z.string(), stream: z.enum(LOG_STREAMS), createdAt: timestamp })),
});

export type ImportView = z.infer<typeof importView>;

export function presentImport(record: DatabaseImportRecord): ImportView {
  return {
    ...record,
    createdAt: record.createdAt.toISOString(),
    startedAt: record.startedAt?.toISOString() ?? null,
    finishedAt: record.finishedAt?.toISOString() ?? null,
  };
}

export function presentImportLog(line: DatabaseImportLogRecord): z.infer<typeof importLogsView>['logs'][number] {
  return { id: line.id, line: line.line, stream: line.stream, createdAt: line.createdAt.toISOString() };
}
