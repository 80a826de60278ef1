import type { AnyTRPCProcedure, TRPCMutationProcedure, TRPCQueryProcedure } from '@trpc/server';
import type { OpenApiMethod } from 'trpc-to-openapi';
import { z } from 'zod';
import { needsWriteKey, readProcedure, writeProcedure, type SlipwayMeta } from './trpc.js';

/** Where a door is and what it says: the REST method, path and documentation of a procedure's second path. */
export interface DoorSpec<R extends Record<string, string>> {
  method: OpenApiMethod;
  path: `/${string}`;
  tags: string[];
  summary: string;
  description?: string;
  /** The request body as documented, when the input object says more than it takes (documentedBody in schemas.ts). */
  body?: { $ref: string };
  /** The door's names for the procedure's input fields (`{ appId: 'serviceId' }`); fields not named keep theirs. */
  input?: R;
}

/** A procedure's input with the door's names: `{ serviceId, branch }` with `{ appId: 'serviceId' }` is `{ appId, branch }`. */
type Renamed<T, R extends Record<string, string>> = {
  [K in keyof T as K extends R[keyof R] ? { [D in keyof R]: R[D] extends K ? D : never }[keyof R] : K]: T[K];
};

type DoorOf<P, R extends Record<string, string>> =
  P extends TRPCQueryProcedure<infer D>
    ? TRPCQueryProcedure<{ input: Renamed<D['input'], R>; output: D['output']; meta: D['meta'] }>
    : P extends TRPCMutationProcedure<infer D>
      ? TRPCMutationProcedure<{ input: Renamed<D['input'], R>; output: D['output']; meta: D['meta'] }>
      : never;

interface ProcedureDef {
  type: 'query' | 'mutation' | 'subscription';
  meta?: SlipwayMeta;
  inputs: unknown[];
  output?: z.ZodType;
  resolver: (opts: { input: unknown }) => Promise<unknown>;
}

/**
 * A second door to a procedure: the same access level, scope, validation (under the door's field
 * names), answer and use case call, at another REST path with its own documentation. The procedure
 * is declared once, in its capability's router; the door is one row of a table (general-api.ts).
 */
export function door<P extends AnyTRPCProcedure, const R extends Record<string, string> = Record<never, string>>(
  procedure: P,
  spec: DoorSpec<R>,
): DoorOf<P, R> {
  const def = procedure._def as unknown as ProcedureDef;
  if (def.type === 'subscription') throw new Error(`A door opens a query or a mutation, not a subscription (${spec.path})`);
  const { openapi: _ownPath, ...rules } = def.meta ?? {};
  const toProcedure = new Map(Object.entries(spec.input ?? {}));
  const toDoor = new Map([...toProcedure].map(([doorName, name]) => [name, doorName]));
  const doorInput = toDoor.size === 0 ? (def.inputs[0] as z.ZodType) : renamedInput(def.inputs[0] as z.ZodObject, toDoor);
  const builder = (needsWriteKey(procedure) ? writeProcedure : readProcedure)
    .meta({
      ...rules,
      openapi: { method: spec.method, path: spec.path, tags: spec.tags, summary: spec.summary, description: spec.description },
      ...(spec.body ? { body: spec.body } : {}),
    })
    .input(doorInput)
    .output(def.output ?? z.unknown());
  const resolve = (opts: { input: Record<string, unknown> }) =>
    def.resolver(
      toProcedure.size === 0
        ? opts
        : { ...opts, input: Object.fromEntries(Object.entries(opts.input).map(([name, value]) => [toProcedure.get(name) ?? name, value])) },
    );
  return (def.type === 'query' ? builder.query(resolve as never) : builder.mutation(resolve as never)) as unknown as DoorOf<P, R>;
}

/** The procedure's object input with the door's field names, in the same order, as strict as it was. */
function renamedInput(input: z.ZodObject, toDoor: ReadonlyMap<string, string>): z.ZodObject {
  const shape = Object.fromEntries(Object.entries(input.shape).map(([name, field]) => [toDoor.get(name) ?? name, field]));
  return input._zod.def.catchall instanceof z.ZodNever ? z.strictObject(shape) : z.object(shape);
}
