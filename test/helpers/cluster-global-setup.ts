import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { removeSharedTestCluster } from './test-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** This vitest run's id and main process: the shared test cluster is named by them (sharedTestCluster). */
    slipwayClusterRun: { runId: string; ownerPid: number };
  }
}

/**
 * Names this run's shared test cluster; builds nothing. The first cluster test file builds it
 * (test/helpers/test-cluster.ts, sharedTestCluster), and it is removed here once every file is done.
 */
export default function setup(project: TestProject): () => Promise<void> {
  const runId = randomBytes(3).toString('hex');
  project.provide('slipwayClusterRun', { runId, ownerPid: process.pid });
  return () => removeSharedTestCluster(runId);
}
