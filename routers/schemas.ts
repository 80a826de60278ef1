import { z } from 'zod';

/** Inputs shared by several routers (their building blocks live in src/platform/input-schemas.ts). Outputs live with their capability (`src/<capability>/*-views.ts`). */

export {
  buildMethod,
  idParam,
  line,
  nullableLine,
  nullableText,
  port,
  queryInt,
  runtimeMode,
  strictBoolean,
  strictInt,
  text,
} from '../src/index.js';

export const okTrue = z.object({ ok: z.literal(true) });

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

/**
 * A request body narrower than its procedure's input object: a union of objects, which trpc-to-openapi
 * cannot take as an input. The document shows it as the `id` component in place of the input's shape
 * (adapters/http/openapi.ts); the use case holds every body to the same schema.
 */
export function documentedBody(id: string, schema: z.ZodType): { $ref: string } {
  DOCUMENTED_BODIES[id] = schema;
  return { $ref: `#/components/schemas/${id}` };
}

export const DOCUMENTED_BODIES: Record<string, z.ZodType> = {};
