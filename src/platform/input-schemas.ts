import { z } from 'zod';
import { BUILD_METHODS, RUNTIME_MODES } from '../domain/types.js';

/*
 * The building blocks of input schemas: the use cases declare their inputs with them (and take the
 * parsed type), the routers reuse both.
 *
 * Control characters: none in names, ids, keys, hostnames, paths and tokens (C0 and DEL); free text
 * (descriptions, commands, values) may hold tab, line feed and carriage return, nothing else of C0.
 * NUL is refused everywhere: PostgreSQL cannot store it in text and no tool downstream expects it.
 */
const NO_CONTROL = /^[^\u0000-\u001f\u007f]*$/;
const FREE_TEXT = /^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]*$/;

/** A name, id, key or other one-line value: no control characters. */
export const line = (max: number) => z.string().max(max).regex(NO_CONTROL, { message: 'must not contain control characters' });
/** Free text: tab and line breaks allowed, no other control character. */
export const text = (max?: number) => {
  const base = max === undefined ? z.string() : z.string().max(max);
  return base.regex(FREE_TEXT, { message: 'must not contain control characters other than tab and line breaks' });
};

export const idParam = line(64).min(1);

/** Strings that may be sent as null to clear them. */
export const nullableText = (max = 4096) => text(max).nullable().optional();
/** One-line strings that may be sent as null to clear them. */
export const nullableLine = (max = 4096) => line(max).nullable().optional();

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

/**
 * An integer that REST sends as query text and the typed client as a number: "12" and 12, never "1e3",
 * with the range checked after (so the 400 names the field).
 */
export const queryInt = (min: number, max: number) =>
  z
    .union([z.number(), z.string().regex(/^-?\d{1,12}$/, { message: 'must be an integer' })])
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

export const buildMethod = z.enum(BUILD_METHODS);
export const runtimeMode = z.enum(RUNTIME_MODES);
export const port = strictInt(1, 65535);
