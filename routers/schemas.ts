import { z } from 'zod';

/** Inputs shared by several routers. Outputs live in src/services/views.ts. */
export const idParam = z.string().min(1).max(64);
export const okTrue = z.object({ ok: z.literal(true) });

/** Strings that may be sent as null to clear them. */
export const nullableText = (max = 4096) => z.string().max(max).nullable().optional();

/*
 * trpc-to-openapi coerces plain z.number()/z.boolean() fields of every input, JSON bodies included,
 * by mutating the schema (so the typed client would coerce too): "false" would become true.
 * A field behind a transform pipe is left alone, so numbers and booleans in inputs go through these.
 */
export const strictBoolean = () => z.boolean().transform((value) => value);
export const strictInt = (min: number, max: number) =>
  z
    .number()
    .int()
    .min(min)
    .max(max)
    .transform((value) => value);

export const buildMethod = z.enum(['auto', 'dockerfile', 'analyzer']);
export const runtimeMode = z.enum(['web', 'worker']);
export const port = strictInt(1, 65535);

/**
 * An output that TypeScript checks at build time instead of zod at run time, for the hot reads
 * (validating 1,000 presented services took longer than reading them). The document shows the
 * full schema through the `id` component, registered from TRUSTED_OUTPUTS in adapters/http/openapi.ts.
 */
export function trustedOutput<T extends z.ZodType>(id: string, schema: T) {
  TRUSTED_OUTPUTS[id] = schema;
  return z.custom<z.output<T>>(() => true).meta({ override: { $ref: `#/components/schemas/${id}` } });
}

export const TRUSTED_OUTPUTS: Record<string, z.ZodType> = {};
