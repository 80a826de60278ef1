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
