import { describe, expect, it } from 'vitest';
import { globToRegExp, repositoryKey, repositoryKeys, sameRepository, watchedChanges } from '../../src/git-hooks/matching.js';

describe('repository keys', () => {
  it('one key for the URLs a repository is known by', () => {
    for (const url of [
      'https://github.com/Org/App.git',
      'https://user:token@github.com/org/app',
      'http://github.com:8080/org/app/',
      'git@github.com:org/app.git',
      'ssh://git@github.com:22/org/app.git',
      'git://github.com/org/app.git',
    ])
      expect(repositoryKey(url), url).toBe('github.com/org/app');
    expect(repositoryKey('git@gitlab.example.com:group/sub/app.git')).toBe('gitlab.example.com/group/sub/app');
    expect(repositoryKey('not a url')).toBeNull();
  });

  it('a service matches by URL, or by owner/name whatever the host', () => {
    const delivery = repositoryKeys({
      fullName: 'Org/App',
      urls: ['https://github.com/Org/App.git', 'git@github.com:Org/App.git'],
      id: null,
    });
    expect(sameRepository(delivery, { cloneUrl: 'https://github.com/org/app.git', repoFullName: null })).toBe(true);
    expect(sameRepository(delivery, { cloneUrl: 'https://mirror.example.com/x/y.git', repoFullName: 'org/app' })).toBe(true);
    expect(sameRepository(delivery, { cloneUrl: 'http://127.0.0.1:9/org/app.git', repoFullName: null })).toBe(true);
    expect(sameRepository(delivery, { cloneUrl: 'https://github.com/org/other.git', repoFullName: null })).toBe(false);
    expect(
      sameRepository(repositoryKeys({ fullName: null, urls: ['https://x.example/a/b'], id: null }), {
        cloneUrl: 'https://x.example/a/c',
        repoFullName: null,
      }),
    ).toBe(false);
  });
});

describe('watchPaths', () => {
  it('globs as the hosts read them', () => {
    const cases: Array<[string, string, boolean]> = [
      ['apps/web/**', 'apps/web/src/index.ts', true],
      ['apps/web/**', 'apps/api/src/index.ts', false],
      ['apps/web/', 'apps/web/package.json', true],
      ['*.md', 'docs/guide/readme.md', true],
      ['/*.md', 'docs/readme.md', false],
      ['/*.md', 'README.md', true],
      ['**/*.ts', 'a.ts', true],
      ['**/*.ts', 'a/b/c.ts', true],
      ['src/*.ts', 'src/a/b.ts', false],
      ['src/{a,b}/**', 'src/b/x', true],
      ['src/{a,b}/**', 'src/c/x', false],
      ['file?.txt', 'file1.txt', true],
      ['[ab].txt', 'b.txt', true],
      ['package.json', 'apps/web/package.json', true],
      ['a.b', 'axb', false],
    ];
    for (const [pattern, file, expected] of cases) expect(globToRegExp(pattern).test(file), `${pattern} ~ ${file}`).toBe(expected);
  });

  it('no patterns or unknown files match; exclusions take paths back', () => {
    expect(watchedChanges([], ['x'])).toEqual({ matches: true, files: [] });
    expect(watchedChanges(['apps/web/**'], null).matches).toBe(true);
    expect(watchedChanges(['apps/web/**'], ['apps/api/a.ts']).matches).toBe(false);
    expect(watchedChanges(['apps/web/**', '!**/*.md'], ['apps/web/README.md']).matches).toBe(false);
    expect(watchedChanges(['apps/web/**', '!**/*.md'], ['apps/web/README.md', 'apps/web/a.ts'])).toEqual({
      matches: true,
      files: ['apps/web/a.ts'],
    });
    expect(watchedChanges(['!docs/**'], ['src/a.ts']).matches).toBe(true);
  });
});
