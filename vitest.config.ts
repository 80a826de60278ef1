import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Names the run's shared Swarm test cluster and removes it at the end (builds nothing itself).
    globalSetup: ['test/helpers/cluster-global-setup.ts'],
    reporters: ['default'],
    // The platform's tests, and the dashboard's component tests (jsdom) as a project of their own.
    projects: [{ extends: true, test: { name: 'platform', include: ['test/**/*.test.ts'] } }, 'packages/dashboard/vitest.config.ts'],
  },
});
