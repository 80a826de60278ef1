import { z } from 'zod';

/** Inputs shared by several routers. Outputs live in src/services/views.ts. */
export const idParam = z.string().min(1).max(64);
export const okTrue = z.object({ ok: z.literal(true) });

/** Strings that may be sent as null to clear them. */
export const nullableText = (max = 4096) => z.string().max(max).nullable().optional();

export const buildMethod = z.enum(['auto', 'dockerfile', 'analyzer']);
export const runtimeMode = z.enum(['web', 'worker']);
export const port = z.number().int().min(1).max(65535);
