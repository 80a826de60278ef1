/**
 * Push to deploy against a manual deployment of the same commit: `npm run bench:push-to-deploy`.
 *
 * Once a deployment row is queued, a push and a manual deployment run the same queue and pipeline; they
 * differ in two places only, and this measures both in one run, alternating so that drift weighs on both:
 *  1. Reaching the queue (the platform's own work, SQLite in a file as `npm start` keeps it):
 *     - manual: `POST /api/services/:id/deployments` through the router (`createCaller`: key, validation, row);
 *     - push: a signed GitHub push delivery from GitHub's documented example payload through the deliveries
 *       use case (sender told by its headers, HMAC-SHA256 over the raw body in constant time, replay check,
 *       matching by repository, branch and watchPaths, the delivery record and the deployment row).
 *  2. Getting the source (a real `git http-backend` on loopback, the adapter the runtime uses):
 *     - manual: `git clone --depth 1 --branch main` of the branch's head;
 *     - push: exactly the pushed commit, `git init` + `git fetch --depth 1 origin <sha>` + checkout.
 * The table gives milliseconds per operation (median of rounds) and push minus manual; the sum of the two
 * differences is what a push adds to "request to live" over a manual deployment of the same commit (the
 * build, start and health check that follow are the same code on the same input). Informational: exits 0
 * unless it crashes.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GitHubProvider } from '../adapters/git/github.git-provider.js';
import { GitCliSource } from '../adapters/git/git-cli.git-source.js';
import { githubDelivery } from '../test/helpers/git-host-standins.js';
import { startGitServer } from '../test/helpers/git-server.js';
import { createHarness } from '../test/helpers/harness.js';
import { median, table } from './bench-support.js';
import { runBench } from './run-bench.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const QUEUED = Number(process.env.BENCH_QUEUED ?? 20);
const FETCHES = Number(process.env.BENCH_FETCHES ?? 3);
const FIXTURE = path.resolve(import.meta.dirname, '../test/fixtures/webhooks/github-push.json');

function githubPush(cloneUrl: string, repo: string, sha: string) {
  const base = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Record<string, any>;
  const repository = { ...base.repository, name: repo.split('/')[1], full_name: repo, clone_url: cloneUrl };
  const commit = { ...base.head_commit, id: sha, message: 'Bench', modified: ['www/index.html'], added: [], removed: [] };
  return { ...base, ref: 'refs/heads/main', after: sha, repository, head_commit: commit, commits: [commit] };
}

async function perCall(count: number, call: (i: number) => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint();
  for (let i = 0; i < count; i++) await call(i);
  return Number(process.hrtime.bigint() - started) / 1e6 / count;
}

async function main(): Promise<void> {
  const git = await startGitServer();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-push-'));
  const h = await createHarness({ dataDir, hooks: { providers: [new GitHubProvider()] } });
  try {
    const repo = 'acme/bench';
    const { cloneUrl, commitSha } = await git.addRepo(repo, { 'www/index.html': 'bench\n', Dockerfile: 'FROM busybox\n' });
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Bench push' });
    const { service } = await api.services.create({ projectId: project.id, name: 'web', repoFullName: repo, repoUrl: cloneUrl });
    const secret = (await api.webhooks.createOrRotate({ projectId: project.id })).webhook.secret;
    const payload = JSON.stringify(githubPush(cloneUrl, repo, commitSha));
    const store = h.database.store;
    // Each queued row is marked done at once: the next request meets the same state (no queue growing, nothing superseded).
    const settle = async (id: string) => store.deployments.update(id, { status: 'succeeded', finishedAt: new Date() });

    const manualQueue = () =>
      perCall(QUEUED, async () => {
        const { deployment } = await api.deployments.create({ serviceId: service.id });
        await settle(deployment.id);
      });
    const pushQueue = () =>
      perCall(QUEUED, async () => {
        const delivery = githubDelivery('push', JSON.parse(payload), secret, randomUUID());
        const answer = await h.services.deliveries.receive(project.id, {
          headers: delivery.headers,
          body: Buffer.from(delivery.body),
          receivedAt: new Date(),
        });
        if (!('body' in answer) || answer.body.deploymentIds.length !== 1)
          throw new Error(`the push deployed nothing: ${JSON.stringify(answer)}`);
        await settle(answer.body.deploymentIds[0]!);
      });

    const source = new GitCliSource();
    const scratch = mkdtempSync(path.join(tmpdir(), 'slipway-bench-clone-'));
    let n = 0;
    const fetchOnce = async (commit: boolean) => {
      const dest = path.join(scratch, String(++n));
      const { commitSha: got } = await source.clone({
        url: cloneUrl,
        branch: 'main',
        token: null,
        dest,
        ...(commit ? { commit: { sha: commitSha, ref: null } } : {}),
        signal: AbortSignal.timeout(60_000),
        onLine: () => {},
      });
      if (got !== commitSha) throw new Error(`fetched ${got}, not ${commitSha}`);
      rmSync(dest, { recursive: true, force: true });
    };
    const manualFetch = () => perCall(FETCHES, () => fetchOnce(false));
    const pushFetch = () => perCall(FETCHES, () => fetchOnce(true));

    const rounds = { manualQueue: [] as number[], pushQueue: [] as number[], manualFetch: [] as number[], pushFetch: [] as number[] };
    // One warm-up round, not counted; then manual and push alternate which goes first.
    for (let round = 0; round <= ROUNDS; round++) {
      const order = round % 2 === 0 ? (['manual', 'push'] as const) : (['push', 'manual'] as const);
      const got: Record<string, number> = {};
      for (const kind of order) {
        got[`${kind}Queue`] = kind === 'manual' ? await manualQueue() : await pushQueue();
        got[`${kind}Fetch`] = kind === 'manual' ? await manualFetch() : await pushFetch();
      }
      if (round === 0) continue;
      for (const key of Object.keys(rounds) as Array<keyof typeof rounds>) rounds[key].push(got[key]!);
    }
    rmSync(scratch, { recursive: true, force: true });

    const m = Object.fromEntries(Object.entries(rounds).map(([k, v]) => [k, median(v)])) as Record<keyof typeof rounds, number>;
    const fmt = (ms: number) => ms.toFixed(2);
    const signed = (ms: number) => `${ms >= 0 ? '+' : ''}${ms.toFixed(2)}`;
    const queueDiff = m.pushQueue - m.manualQueue;
    const fetchDiff = m.pushFetch - m.manualFetch;
    console.log(
      `push to deploy against manual, same commit (median of ${ROUNDS} rounds; ${QUEUED} requests and ${FETCHES} fetches a round)\n`,
    );
    console.log(
      table([
        ['step', 'manual (ms)', 'push (ms)', 'push - manual (ms)'],
        ['request -> deployment queued', fmt(m.manualQueue), fmt(m.pushQueue), signed(queueDiff)],
        ['source: branch clone vs fetch of the sha', fmt(m.manualFetch), fmt(m.pushFetch), signed(fetchDiff)],
        ['what a push adds to request -> live', '', '', signed(queueDiff + fetchDiff)],
      ]),
    );
    console.log(`\nper-round push - manual, queue: ${rounds.pushQueue.map((p, i) => signed(p - rounds.manualQueue[i]!)).join(', ')}`);
    console.log(`per-round push - manual, source: ${rounds.pushFetch.map((p, i) => signed(p - rounds.manualFetch[i]!)).join(', ')}`);
  } finally {
    await h.services.statuses.stop();
    await h.services.poller.stop();
    await h.services.previews.stop();
    await h.close();
    await git.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await runBench(main, 10 * 60_000);
