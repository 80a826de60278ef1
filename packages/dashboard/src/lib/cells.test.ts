import { describe, expect, it } from 'vitest';
import { cellInput, changedCells, formatCell, primaryKeyOf } from './cells';

describe('row editor cells', () => {
  it('formats cells for display', () => {
    expect(formatCell(null)).toBe('NULL');
    expect(formatCell({ a: 1 })).toBe('{"a":1}');
    expect(formatCell(42)).toBe('42');
    expect(formatCell(true)).toBe('true');
  });

  it('turns typed text into the value sent', () => {
    expect(cellInput('', 'integer')).toBeNull();
    expect(cellInput('', 'text')).toBe('');
    expect(cellInput('NULL', 'text')).toBeNull();
    expect(cellInput('12', 'integer')).toBe('12');
  });

  it('finds the primary key and the changed cells', () => {
    const columns = [
      { name: 'id', type: 'integer', primary: true },
      { name: 'name', type: 'text', primary: false },
      { name: 'note', type: 'text', primary: false },
    ];
    const row = { id: 7, name: 'a', note: null };
    expect(primaryKeyOf(columns, row)).toEqual({ id: 7 });
    expect(primaryKeyOf([{ name: 'x', primary: false }], row)).toBeNull();
    expect(changedCells(columns, row, { id: '7', name: 'b', note: 'NULL' })).toEqual({ name: 'b' });
    expect(changedCells(columns, row, { note: 'hello' })).toEqual({ note: 'hello' });
  });
});
