import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Names the run's shared Swarm test cluster and removes it at the end (builds nothing itself).
    globalSetup: ['test/helpers/cluster-global-setup.ts'],
    reporters: ['default'],
  },
});
