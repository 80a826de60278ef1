import type { api } from './server-process.js';

type Call = ReturnType<typeof api>;

export interface Finished {
  deployment: {
    id: string;
    status: string;
    commitSha: string | null;
    imageTag: string | null;
    containerName: string | null;
    startedAt: string | null;
    finishedAt: string | null;
  };
  logs: string[];
}

/** Polls a deployment until it ends; returns it with its log text. */
export async function waitForDeployment(call: Call, deploymentId: string, timeoutMs = 240_000): Promise<Finished> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { deployment } = (await call('GET', `/api/deployments/${deploymentId}`)).json;
    if (['succeeded', 'failed', 'aborted'].includes(deployment.status)) {
      const logs = (await call('GET', `/api/deployments/${deploymentId}/logs`)).json.logs.map((l: { line: string }) => l.line);
      return { deployment, logs };
    }
    if (Date.now() > deadline) throw new Error(`deployment ${deploymentId} still ${deployment.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function deploy(call: Call, serviceId: string, timeoutMs?: number): Promise<Finished> {
  const created = await call('POST', `/api/services/${serviceId}/deployments`);
  if (created.status !== 201) throw new Error(`deploy failed: ${created.status} ${created.text}`);
  return waitForDeployment(call, created.json.deployment.id, timeoutMs);
}

export async function waitForLogLine(call: Call, deploymentId: string, pattern: RegExp, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const logs = (await call('GET', `/api/deployments/${deploymentId}/logs`)).json.logs as Array<{ line: string }>;
    if (logs.some((l) => pattern.test(l.line))) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no log line matching ${pattern} within ${timeoutMs} ms`);
}
