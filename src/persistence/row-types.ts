import type { InferEntity } from '@mikro-orm/core';

/** An entity's row as MikroORM infers it, string keys only. */
export type Row<E> = { [K in keyof InferEntity<E> as K extends string ? K : never]: InferEntity<E>[K] };

/** Compiles only when the two types have the same keys with mutually assignable types. */
export type Same<A, B> = [keyof A] extends [keyof B]
  ? [keyof B] extends [keyof A]
    ? [A] extends [B]
      ? [B] extends [A]
        ? true
        : false
      : false
    : false
  : false;

/** `same<Same<Row, Record>>()`: a row and its record kept alike by the compiler. */
export function same<_ extends true>(): void {}
