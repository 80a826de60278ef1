import react from '@vitejs/plugin-react';
import { defineProject } from 'vitest/config';

/** The dashboard's component tests: jsdom, run by the root `vitest run` as the project `dashboard`. */
export default defineProject({
  plugins: [react()],
  test: {
    name: 'dashboard',
    environment: 'jsdom',
    include: ['src/**/*.test.{ts,tsx}'],
    setupFiles: ['./src/test-setup.ts'],
  },
});
