import { describe, expect, it } from 'vitest';
import { applySuggestion, ENV_KEY, matchSuggestions, openReference, referencesIn } from './env-suggest';

describe('${slug.KEY} suggestions', () => {
  it('finds the reference open at the cursor', () => {
    expect(openReference('postgres://${db.', 16)).toEqual({ start: 11, query: 'db.' });
    expect(openReference('${', 2)).toEqual({ start: 0, query: '' });
    expect(openReference('${db.URL} and more', 18)).toBeNull();
    expect(openReference('no reference', 5)).toBeNull();
    expect(openReference('${db. x', 7)).toBeNull();
  });

  it('matches prefixes first, then substrings, without duplicates', () => {
    const items = [{ key: 'web.PORT' }, { key: 'db.DATABASE_URL' }, { key: 'hostPort' }, { key: 'db.PORT' }, { key: 'web.PORT' }];
    expect(matchSuggestions(items, 'db').map((i) => i.key)).toEqual(['db.DATABASE_URL', 'db.PORT']);
    expect(matchSuggestions(items, 'port').map((i) => i.key)).toEqual(['web.PORT', 'hostPort', 'db.PORT']);
    expect(matchSuggestions(items, '', 2)).toHaveLength(2);
  });

  it('replaces the open reference and puts the cursor after it', () => {
    const value = 'url=${db.D';
    const ref = openReference(value, value.length)!;
    expect(applySuggestion(value, value.length, ref, 'db.DATABASE_URL')).toEqual({ value: 'url=${db.DATABASE_URL}', cursor: 22 });
    // a closing brace already typed is reused
    expect(applySuggestion('${we}!', 4, openReference('${we}!', 4)!, 'web.PORT')).toEqual({ value: '${web.PORT}!', cursor: 11 });
  });

  it('lists the references of a value and checks keys', () => {
    expect(referencesIn('${a.B}:${c.D}/${bad')).toEqual(['a.B', 'c.D']);
    expect(ENV_KEY.test('DATABASE_URL')).toBe(true);
    expect(ENV_KEY.test('1X')).toBe(false);
    expect(ENV_KEY.test('lower')).toBe(false);
  });
});
