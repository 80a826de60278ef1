import type { AnyTRPCProcedure } from '@trpc/server';
import { z } from 'zod';

/*
 * trpc-to-openapi's input rules (3.3.0, MIT), the few REST needs: how a path becomes a pattern, which
 * schema a procedure's input is read against, and which of its fields are coerced from query strings.
 * They are here, not imported, because the package's one entry point also loads its document generator
 * (zod-openapi, openapi3-ts, yaml) and every adapter it ships (h3 and nine more packages for Nuxt, co-body
 * and qs for node-http): some 25 packages an idle platform never used (issue 32). The document is still
 * made by trpc-to-openapi (adapters/http/openapi.ts), on its first request.
 */

/** A zod schema as these rules look at it: its kind, and what unwrapping reads. */
interface ZodLike {
  _zod?: { def?: { type?: string; in?: ZodLike; out?: ZodLike } };
  _def: Record<string, unknown> & { coerce?: boolean; options?: ZodLike[] };
  def: { getter?: () => ZodLike; out?: ZodLike; left?: ZodLike; right?: ZodLike };
  element?: ZodLike;
  shape?: Record<string, ZodLike>;
  unwrap?: () => ZodLike;
}

export function acceptsRequestBody(method: string): boolean {
  return method !== 'GET' && method !== 'DELETE';
}

export function normalizePath(path: string): string {
  return `/${path.replace(/^\/|\/$/g, '')}`;
}

export function getPathRegExp(path: string): RegExp {
  const groupedExp = path.replace(/\{(.+?)\}/g, (_, key: string) => `(?<${key}>[^/]+)`);
  return new RegExp(`^${groupedExp}$`, 'i');
}

/** The procedure's input schema: its one `.input()`, the merge of several, or an empty object. */
export function inputParserOf(procedure: AnyTRPCProcedure): unknown {
  const inputs = (procedure._def as unknown as { inputs: z.ZodObject[] }).inputs;
  if (inputs.length >= 2) return inputs.reduce((acc, parser) => acc.merge(parser), z.object({}));
  return inputs[0] ?? z.object({});
}

function kindOf(type: unknown): string | undefined {
  return (type as ZodLike | undefined)?._zod?.def?.type;
}

export function instanceofZodTypeOptional(type: unknown): boolean {
  return kindOf(type) === 'optional';
}

export function instanceofZodTypeObject(type: unknown): boolean {
  return kindOf(type) === 'object';
}

export function instanceofZodTypeLikeVoid(type: unknown): boolean {
  const kind = kindOf(type);
  return kind === 'void' || kind === 'undefined' || kind === 'never';
}

export function unwrapZodType(type: unknown, unwrapPreprocess: boolean): unknown {
  const t = type as ZodLike;
  switch (kindOf(t)) {
    case 'array':
      return unwrapZodType(t.element, unwrapPreprocess);
    case 'enum':
      return unwrapZodType(z.string(), unwrapPreprocess);
    case 'nullable':
    case 'optional':
    case 'default':
    case 'prefault':
      return unwrapZodType(t.unwrap!(), unwrapPreprocess);
    case 'lazy':
      return unwrapZodType(t.def.getter!(), unwrapPreprocess);
    case 'pipe':
      if (!unwrapPreprocess) return t;
      // A .transform() pipe's out is a 'transform': the input's shape is its in.
      if (kindOf(t._zod!.def!.out) === 'transform') return unwrapZodType(t._zod!.def!.in, unwrapPreprocess);
      return unwrapZodType(t.def.out, unwrapPreprocess);
    default:
      return t;
  }
}

function coercible(type: unknown): boolean {
  const kind = kindOf(unwrapZodType(type, false));
  return kind === 'number' || kind === 'boolean' || kind === 'bigint' || kind === 'date';
}

/** Marks every number, boolean, bigint and date field (nested objects too) as coerced from a string. */
export function coerceSchema(schema: unknown): void {
  for (const field of Object.values((schema as ZodLike).shape ?? {})) {
    const unwrapped = unwrapZodType(field, false) as ZodLike;
    if (coercible(unwrapped)) unwrapped._def.coerce = true;
    else if (instanceofZodTypeObject(unwrapped)) coerceSchema(unwrapped);
  }
}
