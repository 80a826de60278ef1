import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/helpers/slow-first-sequencer.js';

/**
 * Two test files at a time (SLIPWAY_TEST_WORKERS says otherwise): side by side they overlap their waits
 * on Docker, Caddy and databases, and each keeps to its own platform, ports, names, Caddy and containers.
 * More than two pushed server starts past their 30 s limit on a 2-core host. Files on the run's shared
 * Swarm cluster (sharedTestCluster: a file may kill and revive its nodes) run beside the others but one
 * at a time on the cluster: they take its use lock (test/helpers/test-cluster.ts).
 */
const PARALLEL_FILES = Number(process.env.SLIPWAY_TEST_WORKERS ?? '2');

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
    // The platform's tests, and the dashboard's component tests (jsdom) as a project of their own.
    projects: [
      {
        extends: true,
        test: {
          name: 'platform',
          include: ['test/**/*.test.ts'],
        },
      },
      'packages/dashboard/vitest.config.ts',
    ],
  },
});
