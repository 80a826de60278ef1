import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest, longest first (from CI logs): with several workers the run ends when its
 * last file does, so a long file must not start last. vitest's own order (longest first from its results
 * cache, else the largest file first) holds for the rest; a clean clone on CI has no results cache.
 */
const SLOWEST_FIRST = [
  'test/e2e/zero-downtime.test.ts',
  'test/e2e/node-runtimes.test.ts',
  // Seven benches at a smoke size, two at a time (several minutes, mostly waiting).
  'test/e2e/bench-companions.test.ts',
  'test/e2e/backups-redis-mongodb.test.ts',
  'test/e2e/deploy.test.ts',
  'test/e2e/container-image.test.ts',
  'test/e2e/dashboard.test.ts',
  'test/e2e/databases.test.ts',
  'test/integration/database-dump.test.ts',
  'test/e2e/cluster-harness.test.ts',
  'test/e2e/backups-mysql-clickhouse.test.ts',
  'test/e2e/replicas.test.ts',
  'test/e2e/push-to-deploy.test.ts',
  // Its time is mostly its beforeAll (a tiny run of every bench), which the per-file figure leaves out.
  'test/e2e/benches.test.ts',
  'test/e2e/access-matrix.test.ts',
  'test/e2e/fixtures.test.ts',
  'test/e2e/cli.test.ts',
  'test/e2e/lifecycle.test.ts',
  'test/e2e/first-run.test.ts',
];

function rank(spec: TestSpecification): number {
  const at = SLOWEST_FIRST.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
  return at === -1 ? SLOWEST_FIRST.length : at;
}

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    // Stable: within one group and project, the listed files first, the rest in vitest's order.
    return (await super.sort(files)).sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        (a.project.name === b.project.name ? 0 : a.project.name < b.project.name ? -1 : 1) ||
        rank(a) - rank(b),
    );
  }
}
