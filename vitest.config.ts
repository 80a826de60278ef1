import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default'],
    // The platform's tests, and the dashboard's component tests (jsdom) as a project of their own.
    projects: [{ extends: true, test: { name: 'platform', include: ['test/**/*.test.ts'] } }, 'packages/dashboard/vitest.config.ts'],
  },
});
