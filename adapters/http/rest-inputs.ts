import type { AnyTRPCProcedure } from '@trpc/server';

/*
 * How a REST request becomes a procedure's input: the path template's parameters, then the JSON body
 * (POST, PUT, PATCH) or the query string (GET, DELETE). Query and path values are text; a field the
 * schema reads as a number, boolean, bigint or date is converted here when the text is one, and left as
 * text otherwise (so the procedure's own validation answers the 400 naming the field). Schemas are only
 * read, never changed: the typed client's inputs are parsed exactly as declared, and a JSON body keeps
 * its own types ("5" stays a string where a number is asked for).
 *
 * The facts needed of a schema are worked out once per procedure, at the first request, reading zod's
 * definitions (`_zod.def`). Written here rather than taken from trpc-to-openapi: that package's one entry
 * point also loads its document generator and every server adapter it ships, which an idle platform never
 * uses (issue 32). The OpenAPI document is still trpc-to-openapi's, loaded on its first request (koa-app.ts).
 */

/** A path template's segments: literal text, or the input field a segment names (`{serviceId}`). */
type Segment = { literal: string } | { param: string };

/** A documented path such as `/api/services/{serviceId}/overview`, matched segment by segment. */
export class PathTemplate {
  private readonly segments: Segment[];

  constructor(template: string) {
    this.segments = segmentsOf(template).map((segment) => {
      const param = /^\{([^{}]+)\}$/.exec(segment)?.[1];
      return param === undefined ? { literal: segment.toLowerCase() } : { param };
    });
  }

  /** The path's parameters (as sent, still percent-encoded), or null when the path is not this one. Letter case is not significant. */
  match(pathname: string): Record<string, string> | null {
    return this.matchSegments(segmentsOf(pathname));
  }

  /** Segments in the template. */
  get length(): number {
    return this.segments.length;
  }

  /** As `match`, of a path already split by `segmentsOf` (a request is matched against every route: split once). */
  matchSegments(parts: readonly string[]): Record<string, string> | null {
    if (parts.length !== this.segments.length) return null;
    const params: Record<string, string> = {};
    for (let i = 0; i < parts.length; i++) {
      const segment = this.segments[i]!;
      const part = parts[i]!;
      if ('literal' in segment) {
        if (part.toLowerCase() !== segment.literal) return null;
      } else {
        if (part === '') return null;
        params[segment.param] = part;
      }
    }
    return params;
  }
}

/** `/a/b/`, `a/b` and `/a/b` are the same path. */
export function segmentsOf(path: string): string[] {
  const start = path.startsWith('/') ? 1 : 0;
  const end = path.endsWith('/') && path.length > start ? path.length - 1 : path.length;
  return path.slice(start, end).split('/');
}

/** What a text value of a field is converted to. */
type TextKind = 'number' | 'boolean' | 'bigint' | 'date' | 'text';

interface FieldPlan {
  /** The field takes a list: a query parameter given once is a list of one. */
  list: boolean;
  /** What one text value (the list's items, for a list) is read as. */
  kind: TextKind;
}

/** What REST needs to know of a procedure's input. */
export interface InputPlan {
  /** False for a procedure declared without input, or with a void one: it is called with none. */
  takesInput: boolean;
  fields: ReadonlyMap<string, FieldPlan>;
}

/** The fields of zod's definitions this file reads (zod 4). */
interface SchemaDef {
  type?: string;
  innerType?: unknown;
  in?: unknown;
  out?: unknown;
  element?: unknown;
  shape?: Record<string, unknown>;
  getter?: () => unknown;
}

function defOf(schema: unknown): SchemaDef {
  return ((schema as { _zod?: { def?: SchemaDef } } | undefined)?._zod?.def ?? {}) as SchemaDef;
}

/** Wrappers whose inside is what a request sends. */
const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'nonoptional', 'readonly', 'catch']);

/**
 * The schema a request value is read against, past wrappers, lazies and pipes (a pipe's input side:
 * that is what arrives; its output side where the input side is a transform, as in a preprocess).
 */
function innermost(schema: unknown, depth = 0): unknown {
  if (depth > 32) return schema;
  const def = defOf(schema);
  if (def.type !== undefined && WRAPPERS.has(def.type)) return innermost(def.innerType, depth + 1);
  if (def.type === 'lazy' && def.getter) return innermost(def.getter(), depth + 1);
  if (def.type === 'pipe') {
    const inside = innermost(def.in, depth + 1);
    return defOf(inside).type === 'transform' ? innermost(def.out, depth + 1) : inside;
  }
  return schema;
}

function textKindOf(schema: unknown): TextKind {
  const type = defOf(innermost(schema)).type;
  return type === 'number' || type === 'boolean' || type === 'bigint' || type === 'date' ? type : 'text';
}

function fieldPlanOf(schema: unknown): FieldPlan {
  const inner = innermost(schema);
  const def = defOf(inner);
  return def.type === 'array' ? { list: true, kind: textKindOf(def.element) } : { list: false, kind: textKindOf(inner) };
}

const VOID_TYPES = new Set(['void', 'undefined', 'never']);
const plans = new WeakMap<AnyTRPCProcedure, InputPlan>();

/** The procedure's input plan: the fields of all its `.input()` objects together. */
export function inputPlanOf(procedure: AnyTRPCProcedure): InputPlan {
  const known = plans.get(procedure);
  if (known) return known;
  const inputs = ((procedure._def as { inputs?: unknown[] }).inputs ?? []).map((schema) => innermost(schema));
  const fields = new Map<string, FieldPlan>();
  for (const input of inputs) {
    for (const [name, field] of Object.entries(defOf(input).shape ?? {})) fields.set(name, fieldPlanOf(field));
  }
  const plan: InputPlan = {
    // Without any .input() tRPC ignores what it is given; an empty object keeps such calls as they were.
    takesInput: !(inputs.length > 0 && inputs.every((input) => VOID_TYPES.has(defOf(input).type ?? ''))),
    fields,
  };
  plans.set(procedure, plan);
  return plan;
}

/** A text value as the field reads it, or the text itself where it is not one (validation then names the field). */
function fromText(value: string, kind: TextKind): unknown {
  switch (kind) {
    case 'number': {
      const trimmed = value.trim();
      const number = Number(trimmed);
      return trimmed !== '' && Number.isFinite(number) ? number : value;
    }
    case 'boolean':
      return value === 'true' ? true : value === 'false' ? false : value;
    case 'bigint':
      return /^-?\d{1,40}$/.test(value) ? BigInt(value) : value;
    case 'date': {
      const time = Date.parse(value);
      return Number.isNaN(time) ? value : new Date(time);
    }
    case 'text':
      return value;
  }
}

/** Converts the text values of `values` (query parameters, path parameters) to what their fields read. */
function converted(plan: InputPlan, values: Record<string, unknown>, listsFromSingles: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(values)) {
    const field = plan.fields.get(name);
    if (!field) {
      out[name] = value; // an unknown field is kept, so the procedure's strict object names it in its 400
      continue;
    }
    const read = (item: unknown) => (typeof item === 'string' ? fromText(item, field.kind) : item);
    if (Array.isArray(value)) out[name] = value.map(read);
    else out[name] = field.list && listsFromSingles ? [read(value)] : read(value);
  }
  return out;
}

export interface RestRequest {
  method: string;
  url: URL;
  /** The JSON body as read (undefined without one). */
  body: unknown;
  /** The path template's parameters. */
  pathParams: Record<string, string>;
}

/** The procedure's input for this request (undefined for a procedure that takes none). */
export function restInputOf(plan: InputPlan, request: RestRequest): unknown {
  if (!plan.takesInput) return undefined;
  const path = converted(plan, request.pathParams, false);
  if (request.method !== 'GET' && request.method !== 'DELETE') {
    const body = isRecord(request.body) ? request.body : {};
    return { ...body, ...path };
  }
  const query = converted(plan, queryOf(request.url), true);
  // A DELETE may name what it deletes in a JSON body (DELETE .../database/rows): it joins the query.
  const body = request.method === 'DELETE' && isPlainObject(request.body) ? request.body : {};
  return { ...query, ...body, ...path };
}

/** The query's parameters: a parameter given once is its value, given more is the list; empty values are left out. */
function queryOf(url: URL): Record<string, unknown> {
  const values: Record<string, string | string[]> = {};
  for (const [name, value] of url.searchParams) {
    if (value === '') continue;
    const seen = values[name];
    values[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return values;
}

function isRecord(value: unknown): value is Record<PropertyKey, unknown> {
  return typeof value === 'object' && value !== null;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;
}
