import { readdirSync } from 'node:fs';
import { configDefaults, defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/helpers/slow-first-sequencer.js';

/**
 * Two test files at a time (SLIPWAY_TEST_WORKERS says otherwise): side by side they overlap their waits
 * on Docker, Caddy and databases, and each keeps to its own platform, ports, names, Caddy and containers.
 * More than two pushed server starts past their 30 s limit on a 2-core host. Files on the run's shared
 * Swarm cluster (sharedTestCluster: a file may kill and revive its nodes) always run one at a time, last.
 */
const PARALLEL_FILES = Number(process.env.SLIPWAY_TEST_WORKERS ?? '2');
/** The cluster-* e2e files but cluster-harness, which builds a cluster of its own (startTestCluster). */
const SHARED_CLUSTER_FILES = readdirSync(new URL('test/e2e/', import.meta.url))
  .filter((name) => /^cluster-.+\.test\.ts$/.test(name) && name !== 'cluster-harness.test.ts')
  .map((name) => `test/e2e/${name}`);

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: PARALLEL_FILES,
    sequence: { sequencer: SlowFirstSequencer },
    // Names the run's shared Swarm test cluster and removes it at the end (builds nothing itself).
    globalSetup: ['test/helpers/cluster-global-setup.ts'],
    reporters: ['default'],
    // The platform's tests (the shared-cluster files as a serial group of their own), and the
    // dashboard's component tests (jsdom) as a project of their own.
    projects: [
      {
        extends: true,
        test: {
          name: 'platform',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...SHARED_CLUSTER_FILES],
        },
      },
      {
        extends: true,
        test: {
          name: 'cluster',
          include: SHARED_CLUSTER_FILES,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
      'packages/dashboard/vitest.config.ts',
    ],
  },
});
