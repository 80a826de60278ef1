import { z } from 'zod';

/*
 * What the views of every capability share. Timestamps are ISO 8601 UTC strings with milliseconds
 * through every door.
 */

export const timestamp = z.string().meta({ description: 'ISO 8601 UTC timestamp with milliseconds', example: '2026-11-21T12:00:00.000Z' });

export const iso = (d: Date) => d.toISOString();
export const isoOrNull = (d: Date | null) => (d ? d.toISOString() : null);
