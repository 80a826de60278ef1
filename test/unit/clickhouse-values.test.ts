import { describe, expect, it } from 'vitest';
import { ClickHouseBindings, valueText } from '../../adapters/databases/clickhouse-bindings.js';
import { keyExpressionColumns, primaryKeyPositions } from '../../adapters/databases/clickhouse-catalog.js';

/*
 * The parts of the ClickHouse adapter that decide what a server without query parameters or key flags
 * gets: the integration tests run ClickHouse 18.16 (hex literals, flags present); these cover the other
 * side of each choice (query parameters, a catalog without is_in_primary_key) as pure functions.
 */

describe('ClickHouse values in statements', () => {
  it('binds as query parameters where the server has them, the type from the catalog', () => {
    const b = new ClickHouseBindings(true);
    expect(b.bind('UInt32', 7)).toBe('{v0:UInt32}');
    expect(b.bind("DateTime('Europe/Berlin')", '2024-07-02T03:04:05Z')).toBe("{v1:DateTime('Europe/Berlin')}");
    expect(b.bind('String', "x'); DROP TABLE t; --")).toBe('{v2:String}');
    expect(b.bind('Nullable(String)', null)).toBe('NULL');
    expect(b.params).toEqual({ v0: '7', v1: '1719889445', v2: "x'); DROP TABLE t; --" });
  });

  it('writes only hex digits of a value into the statement where the server binds nothing', () => {
    const b = new ClickHouseBindings(false);
    const sneaky = "it's \\ `x`\t'); DROP TABLE t; --";
    const expression = b.bind('String', sneaky);
    expect(expression).toBe(`CAST(unhex('${Buffer.from(sneaky).toString('hex')}') AS String)`);
    expect(expression.slice("CAST(unhex('".length, -"') AS String)".length)).toMatch(/^[0-9a-f]+$/);
    expect(b.bind('UInt64', '18446744073709551615')).toBe(
      `CAST(unhex('${Buffer.from('18446744073709551615').toString('hex')}') AS UInt64)`,
    );
    expect(b.params).toEqual({});
  });

  it('gives each value the text ClickHouse reads for its type', () => {
    expect(valueText('DateTime', '2024-01-02T03:04:05Z')).toBe('1704164645');
    expect(valueText('DateTime64(3)', '2024-01-02T03:04:05.250+01:00')).toBe('1704161045.250');
    expect(valueText('DateTime', '2024-01-02 03:04:05')).toBe('2024-01-02 03:04:05');
    expect(valueText('String', "a'b\\c")).toBe("a'b\\c");
    expect(valueText('UInt8', true)).toBe('1');
    expect(valueText('Array(String)', ["b'c", 'd\te', null])).toBe("['b\\'c','d\\te',NULL]");
    expect(valueText('Map(String, UInt8)', { "k'": 1 })).toBe("{'k\\'':1}");
  });
});

describe('ClickHouse primary keys from the catalog', () => {
  const cols = (flags: Array<[string, boolean | null]>) => flags.map(([name, inPrimaryKey]) => ({ name, inPrimaryKey }));

  it('takes the flagged columns, in the order of the primary key expression', () => {
    expect(
      primaryKeyPositions(
        cols([
          ['a', false],
          ['b', true],
          ['id', true],
          ['ts', true],
        ]),
        {
          primaryKey: 'id, b, toDate(ts)',
          sortingKey: 'id, b, toDate(ts), a',
        },
      ),
    ).toEqual([null, 2, 1, 3]);
  });

  it("falls back to the sorting key's plain columns where the catalog has no key flags", () => {
    expect(
      primaryKeyPositions(
        cols([
          ['a', null],
          ['b', null],
          ['id', null],
        ]),
        { primaryKey: '', sortingKey: '(id, `b`, cityHash64(a))' },
      ),
    ).toEqual([null, 2, 1]);
    expect(primaryKeyPositions(cols([['a', null]]), { primaryKey: '', sortingKey: '' })).toEqual([null]);
    expect(primaryKeyPositions(cols([['a', null]]), { primaryKey: '', sortingKey: 'tuple()' })).toEqual([null]);
  });

  it('reads quoted names in key expressions', () => {
    expect(keyExpressionColumns('`we``ird`, `back\\\\slash`, plain', new Set(['we`ird', 'back\\slash', 'plain']))).toEqual([
      'we`ird',
      'back\\slash',
      'plain',
    ]);
  });
});
