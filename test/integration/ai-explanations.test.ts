import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TRPCError } from '@trpc/server';
import { AnthropicProvider } from '../../adapters/ai/anthropic.ai-provider.js';
import { OpenAiProvider } from '../../adapters/ai/openai.ai-provider.js';
import type { DeploymentRecord } from '../../src/domain/types.js';
import { newId } from '../../src/domain/ids.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { AnthropicStandin, OpenAiStandin } from '../standins/ai-standins.js';

/**
 * explain-failure and diagnostics through the routers, with the real adapters talking to local
 * stand-ins of OpenAI's Chat Completions and Anthropic's Messages APIs: what the platform sent
 * (masked log, model, schema, auth headers) and what it answered.
 */
let h: Harness;
let openai: OpenAiStandin;
let anthropic: AnthropicStandin;
let api: ReturnType<Harness['caller']>;

const SECRET_ENV = 'hunter2-super-secret-value';
const DB_PASSWORD = 'pg-pass-0123456789';
const GIT_TOKEN = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789';

beforeAll(async () => {
  openai = await new OpenAiStandin().start();
  anthropic = await new AnthropicStandin().start();
});
afterAll(async () => {
  await openai?.close();
  await anthropic?.close();
});

beforeEach(async () => {
  openai.requests.length = 0;
  anthropic.requests.length = 0;
  h = await createHarness({ aiProviders: [new OpenAiProvider(), new AnthropicProvider()], config: { ai: { timeoutMs: 1_500 } } });
  api = h.caller();
  await api.settings.update({
    aiProviders: [
      { providerId: 'gpt', kind: 'openai', baseUrl: openai.baseUrl, apiKey: openai.apiKey },
      { providerId: 'claude', kind: 'anthropic', baseUrl: anthropic.baseUrl, apiKey: anthropic.apiKey },
    ],
  });
});
afterEach(async () => {
  await h.close();
});

async function failure(
  promise: Promise<unknown>,
): Promise<{ code: string; error?: string; message: string; details: Record<string, unknown> }> {
  try {
    await promise;
  } catch (error) {
    const e = error as TRPCError & { cause?: { code?: string; details?: Record<string, unknown> } };
    return { code: e.code, error: e.cause?.code, message: e.message, details: e.cause?.details ?? {} };
  }
  throw new Error('expected a rejection');
}

/** A service with a secret variable, a password-looking one, a git token, and a deployment in `status` with a log. */
async function deploymentIn(status: DeploymentRecord['status']) {
  const { project } = await api.projects.create({ name: `p-${newId().slice(0, 6)}`, description: '' });
  const { service } = await api.services.create({
    projectId: project.id,
    name: 'web',
    repoFullName: null,
    repoUrl: `https://x-access-token:${GIT_TOKEN}@git.example.com/acme/web.git`,
    buildCommand: 'npm run build',
  });
  await api.env.set({ serviceId: service.id, key: 'API_SECRET', value: SECRET_ENV, secret: true });
  await api.env.set({ serviceId: service.id, key: 'DB_PASSWORD', value: DB_PASSWORD });
  const deployment: DeploymentRecord = {
    id: newId(),
    serviceId: service.id,
    commitSha: 'a'.repeat(40),
    status,
    trigger: 'manual',
    origin: null,
    imageTag: null,
    containerName: null,
    rollbackOf: null,
    abortRequested: false,
    startedAt: new Date(),
    finishedAt: status === 'failed' || status === 'succeeded' ? new Date() : null,
    createdAt: new Date(),
  };
  await h.database.store.deployments.insert(deployment);
  await h.database.store.deployments.appendLogs(deployment.id, [
    { line: 'Step 3/5 : RUN npm run build', stream: 'stdout', createdAt: new Date() },
    { line: `echo connecting with ${SECRET_ENV} and ${DB_PASSWORD}`, stream: 'stdout', createdAt: new Date() },
    { line: `fetching https://x-access-token:${GIT_TOKEN}@git.example.com/acme/web.git`, stream: 'stdout', createdAt: new Date() },
    { line: 'curl -H "Authorization: Bearer abcdefghijklmnop1234" https://api.example.com', stream: 'stdout', createdAt: new Date() },
    { line: 'export MYSQL_PWD=rootpw123456 password=letmein99', stream: 'stdout', createdAt: new Date() },
    { line: "Error: Cannot find module 'express'", stream: 'stderr', createdAt: new Date() },
  ]);
  return { service, deployment };
}

function expectNoSecrets(text: string): void {
  for (const secret of [
    SECRET_ENV,
    DB_PASSWORD,
    GIT_TOKEN,
    'abcdefghijklmnop1234',
    'rootpw123456',
    'letmein99',
    openai.apiKey,
    anthropic.apiKey,
  ])
    expect(text).not.toContain(secret);
}

describe('settings: aiProviders', () => {
  it('stores the key encrypted and shows only hasApiKey; an entry without apiKey keeps it', async () => {
    const { settings } = await api.settings.get();
    expect(settings.aiProviders).toEqual([
      { providerId: 'gpt', kind: 'openai', baseUrl: openai.baseUrl, hasApiKey: true, connectedAt: expect.any(String) },
      { providerId: 'claude', kind: 'anthropic', baseUrl: anthropic.baseUrl, hasApiKey: true, connectedAt: expect.any(String) },
    ]);
    expect(JSON.stringify(settings)).not.toContain(openai.apiKey);
    expect(await h.database.store.settings.get('platform')).not.toContain(openai.apiKey);
    await api.settings.update({ aiProviders: [{ providerId: 'gpt', kind: 'openai', baseUrl: openai.baseUrl }] });
    expect((await h.services.settings.aiProvider('gpt'))?.apiKey).toBe(openai.apiKey);
    expect((await failure(api.settings.update({ aiProviders: [{ providerId: 'new', kind: 'openai' }] }))).details.field).toBe(
      'aiProviders.0.apiKey',
    );
    expect(
      (await failure(api.settings.update({ aiProviders: [{ providerId: 'x', kind: 'openai', baseUrl: 'ftp://h', apiKey: 'k' }] }))).details
        .field,
    ).toBe('aiProviders.0.baseUrl');
    expect(
      (
        await failure(
          api.settings.update({ aiProviders: [{ providerId: 'x', kind: 'openai', baseUrl: 'https://u:p@h.example', apiKey: 'k' }] }),
        )
      ).details.field,
    ).toBe('aiProviders.0.baseUrl');
    // An unknown kind is refused by the input schema (a 400 naming aiProviders.0.kind over REST).
    expect((await failure(api.settings.update({ aiProviders: [{ providerId: 'x', kind: 'gemini' as never, apiKey: 'k' }] }))).code).toBe(
      'BAD_REQUEST',
    );
  });
});

describe('POST /api/deployments/:id/explain-failure', () => {
  it('OpenAI: sends the masked log tail, build settings and schema; returns the validated explanation', async () => {
    const { deployment } = await deploymentIn('failed');
    const answer = {
      summary: 'express is missing',
      likelyCause: 'express is not in dependencies',
      suggestedFix: 'npm install express --save',
      commands: ['npm install express --save'],
    };
    openai.answerNext(answer);
    const result = await api.ai.explainFailure({ deploymentId: deployment.id, providerId: 'gpt', model: 'gpt-4o-mini' });
    expect(result).toEqual({ explanation: answer });

    expect(openai.requests).toHaveLength(1);
    const sent = openai.requests[0]!;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.headers.authorization).toBe(`Bearer ${openai.apiKey}`);
    expect(sent.body.model).toBe('gpt-4o-mini');
    expect(sent.body.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: {
        strict: true,
        schema: { type: 'object', required: ['summary', 'likelyCause', 'suggestedFix', 'commands'], additionalProperties: false },
      },
    });
    const prompt = sent.body.messages.map((m: { content: string }) => m.content).join('\n');
    expect(prompt).toContain("Cannot find module 'express'");
    expect(prompt).toContain('"buildCommand": "npm run build"');
    expect(prompt).toContain('"buildMethod": "auto"');
    expect(prompt).toContain('detectedBuildMethod');
    expect(prompt).toContain('********');
    expectNoSecrets(JSON.stringify(sent.body));
  });

  it('Anthropic: x-api-key and anthropic-version, a forced tool call whose input is the explanation', async () => {
    const { deployment } = await deploymentIn('failed');
    const result = await api.ai.explainFailure({ deploymentId: deployment.id, providerId: 'claude', model: 'claude-sonnet-4-5' });
    expect(result.explanation).toEqual(anthropic.answer);
    const sent = anthropic.requests[0]!;
    expect(sent.path).toBe('/v1/messages');
    expect(sent.headers['x-api-key']).toBe(anthropic.apiKey);
    expect(sent.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.body).toMatchObject({
      model: 'claude-sonnet-4-5',
      max_tokens: expect.any(Number),
      tool_choice: { type: 'tool', name: 'explain_failure' },
    });
    expect(sent.body.tools[0]).toMatchObject({ name: 'explain_failure', input_schema: { type: 'object', additionalProperties: false } });
    expect(sent.body.messages[0].content).toContain("Cannot find module 'express'");
    expectNoSecrets(JSON.stringify(sent.body));
  });

  it('409 for a deployment that did not fail; 404 for an unknown provider or deployment', async () => {
    const { deployment } = await deploymentIn('succeeded');
    expect(await failure(api.ai.explainFailure({ deploymentId: deployment.id, providerId: 'gpt', model: 'm' }))).toMatchObject({
      code: 'CONFLICT',
      error: 'conflict',
    });
    const failed = (await deploymentIn('failed')).deployment;
    expect(await failure(api.ai.explainFailure({ deploymentId: failed.id, providerId: 'nope', model: 'm' }))).toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(await failure(api.ai.explainFailure({ deploymentId: 'unknownid', providerId: 'gpt', model: 'm' }))).toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(openai.requests).toHaveLength(0);
  });

  it("502 upstream_error with the provider's message: refused key, server error, overload, timeout, wrong shape, not JSON", async () => {
    const { deployment } = await deploymentIn('failed');
    const ask = (providerId: string) => failure(api.ai.explainFailure({ deploymentId: deployment.id, providerId, model: 'm' }));

    openai.failNext(500, 'The server had an error while processing your request.');
    let res = await ask('gpt');
    expect(res).toMatchObject({ code: 'BAD_GATEWAY', error: 'upstream_error', details: { providerId: 'gpt', status: 500 } });
    expect(res.message).toContain('The server had an error while processing your request.');

    anthropic.failNext(529, 'Overloaded');
    res = await ask('claude');
    expect(res).toMatchObject({ error: 'upstream_error', details: { status: 529 } });
    expect(res.message).toContain('Overloaded');

    openai.answerNext({ summary: 'only this' });
    res = await ask('gpt');
    expect(res.error).toBe('upstream_error');
    expect(res.message).toContain('does not fit');

    openai.rawNext('Sorry, I cannot help with that.');
    expect((await ask('gpt')).message).toContain('not JSON');

    anthropic.rawNext('plain text, no tool call');
    expect((await ask('claude')).message).toContain('no explain_failure tool call');

    openai.hangNext();
    const started = Date.now();
    res = await ask('gpt');
    expect(res.error).toBe('upstream_error');
    expect(res.message).toContain('did not answer in time');
    expect(Date.now() - started).toBeLessThan(5_000);

    // A key the provider refuses: its message, never the key.
    await api.settings.update({
      aiProviders: [{ providerId: 'gpt', kind: 'openai', baseUrl: openai.baseUrl, apiKey: 'sk-wrong-key-0123456789abcdef' }],
    });
    res = await ask('gpt');
    expect(res).toMatchObject({ error: 'upstream_error', details: { status: 401 } });
    expect(res.message).toContain('Incorrect API key provided');
    expect(res.message).not.toContain('sk-wrong-key-0123456789abcdef');
    // Each failure was one request: nothing is retried.
    expect(openai.requests).toHaveLength(5);
    expect(anthropic.requests).toHaveLength(2);
  });

  it('a read key is 403', async () => {
    const { deployment } = await deploymentIn('failed');
    const read = h.caller(await h.mintKey('read'));
    expect((await failure(read.ai.explainFailure({ deploymentId: deployment.id, providerId: 'gpt', model: 'm' }))).code).toBe('FORBIDDEN');
  });
});

describe('POST /api/deployments/:id/diagnostics', () => {
  it('works for any deployment and adds the masked runtime log tail', async () => {
    const { service, deployment } = await deploymentIn('succeeded');
    h.runtimeLogs.scripts.set(service.id, [
      {
        type: 'snapshot',
        lines: [
          { line: 'GET / 500 in 3ms', stream: 'stdout', createdAt: new Date() },
          { line: `db login failed for ${DB_PASSWORD}`, stream: 'stderr', createdAt: new Date() },
        ],
      },
    ]);
    const result = await api.ai.diagnostics({ deploymentId: deployment.id, providerId: 'claude', model: 'claude-haiku' });
    expect(result.explanation).toEqual(anthropic.answer);
    const prompt = anthropic.requests[0]!.body.messages[0].content as string;
    expect(prompt).toContain('GET / 500 in 3ms');
    expect(prompt).toContain('Runtime log');
    expect(prompt).toContain('Latest resource sample');
    expect(anthropic.requests[0]!.body.tool_choice.name).toBe('diagnose_service');
    expectNoSecrets(JSON.stringify(anthropic.requests[0]!.body));
  });
});
