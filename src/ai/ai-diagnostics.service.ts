import { ConflictError, NotFoundError, UpstreamError } from '../domain/errors.js';
import { assertWrite, type Actor } from '../domain/access.js';
import type { DeploymentRecord, ServiceRecord } from '../domain/types.js';
import type { EnvService } from '../env/env.service.js';
import type { RuntimeLogSource } from '../deployments/runtime-logs.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import { deploymentFor } from '../platform/lookup.js';
import { failureExplanationView, type FailureExplanationView } from './ai-views.js';
import type { SettingsService } from '../settings/settings.service.js';
import { AiProviderError, type AiProvider } from './ai-provider.port.js';
import { maskSecrets, secretEnvValues } from './secret-mask.js';

/** The newest lines sent, and at most this many characters of them (the tail is what explains a failure). */
const LOG_LINES = 200;
const LOG_CHARS = 24_000;
const RUNTIME_LINES = 100;
const RUNTIME_LOG_WAIT_MS = 3_000;
const MAX_TOKENS = 2_048;

/**
 * JSON Schema of the answer, written out rather than derived from the zod view: strict structured
 * output (OpenAI) and tool input schemas (Anthropic) take a subset, without length bounds; zod then
 * checks the answer with the bounds.
 */
const EXPLANATION_SCHEMA = {
  type: 'object',
  properties: {
    summary: { type: 'string', description: 'One or two sentences: what went wrong' },
    likelyCause: { type: 'string', description: 'The most likely root cause, citing the log' },
    suggestedFix: { type: 'string', description: 'What to change (code, settings, env) to fix it' },
    commands: { type: 'array', items: { type: 'string' }, description: 'Shell commands that help (may be empty)' },
  },
  required: ['summary', 'likelyCause', 'suggestedFix', 'commands'],
  additionalProperties: false,
} as const;

const SYSTEM = [
  'You are the deployment assistant of Slipway, a self-hosted platform that builds services from Git repositories',
  '(with their Dockerfile, or with a generated one: the "analyzer" builder) or runs container images, starts the',
  'container, and checks that it answers HTTP on its internal port before it gets traffic.',
  'Explain the problem from the material given, for the developer who owns the service. Be specific and brief.',
  'Values shown as ******** are secrets that were masked on purpose; never ask for them.',
].join(' ');

/** A resource sample the diagnostics may include: whatever the metrics capability keeps. */
export type LatestMetrics = (serviceId: string) => Promise<Record<string, unknown> | null>;

/**
 * Asks a connected AI provider what went wrong with a deployment. What is sent is masked first
 * (secret env values, values of secret-looking keys, the git token, anything that looks like a
 * credential); the answer is checked against the spec's Failure explanation shape. One call, bounded
 * by AI_TIMEOUT_MS; any failure of the provider is a 502 with its message.
 */
export class AiDiagnosticsService {
  private readonly providers: Map<string, AiProvider>;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly env: EnvService,
    private readonly settings: SettingsService,
    private readonly runtimeLogs: RuntimeLogSource,
    providers: AiProvider[],
    private readonly latestMetrics: LatestMetrics = async () => null,
  ) {
    this.providers = new Map(providers.map((p) => [p.kind, p]));
  }

  /** A failed deployment: its log tail, the service's build settings and the builder it used. */
  async explainFailure(
    actor: Actor,
    deploymentId: string,
    input: { providerId: string; model: string },
  ): Promise<{ explanation: FailureExplanationView }> {
    assertWrite(actor);
    const { deployment, service } = await deploymentFor(this.deps.store, actor, deploymentId);
    if (deployment.status !== 'failed')
      throw new ConflictError(`The deployment is ${deployment.status}: only a failed deployment can be explained`, {
        status: deployment.status,
      });
    const sections = await this.baseSections(deployment, service);
    return this.ask(input, 'explain_failure', 'This deployment failed. Explain why and how to fix it.', sections, service);
  }

  /** Any deployment, with the running container's log tail and the latest resource sample too. */
  async diagnose(
    actor: Actor,
    deploymentId: string,
    input: { providerId: string; model: string },
  ): Promise<{ explanation: FailureExplanationView }> {
    assertWrite(actor);
    const { deployment, service } = await deploymentFor(this.deps.store, actor, deploymentId);
    const sections = await this.baseSections(deployment, service);
    sections.push(['Runtime log (newest lines of the running container)', await this.runtimeTail(service)]);
    const metrics = await this.latestMetrics(service.id).catch(() => null);
    sections.push(['Latest resource sample', metrics ? JSON.stringify(metrics, null, 2) : 'none recorded']);
    return this.ask(
      input,
      'diagnose_service',
      'The owner says this service misbehaves. Diagnose it from the deployment, its runtime log and resources.',
      sections,
      service,
    );
  }

  private async ask(
    input: { providerId: string; model: string },
    schemaName: string,
    task: string,
    sections: Array<[string, string]>,
    service: ServiceRecord,
  ): Promise<{ explanation: FailureExplanationView }> {
    const connection = await this.settings.aiProvider(input.providerId);
    const provider = connection ? this.providers.get(connection.kind) : undefined;
    if (!connection || !provider) throw new NotFoundError('AI provider', input.providerId);
    const secrets = await this.secretsOf(service);
    secrets.push(connection.apiKey);
    const prompt = maskSecrets(
      [task, ...sections.map(([title, body]) => `## ${title}\n${body}`), 'Answer with the structured result only.'].join('\n\n'),
      secrets,
    );
    const timeoutMs = this.deps.config.ai.timeoutMs;
    let answer: unknown;
    try {
      answer = await provider.complete({
        baseUrl: connection.baseUrl,
        apiKey: connection.apiKey,
        model: input.model,
        system: SYSTEM,
        prompt,
        schemaName,
        schema: EXPLANATION_SCHEMA,
        maxTokens: MAX_TOKENS,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      if (!(error instanceof AiProviderError)) throw error;
      throw new UpstreamError(`${input.providerId}: ${maskSecrets(error.message, secrets)}`, {
        providerId: input.providerId,
        ...(error.status ? { status: error.status } : {}),
      });
    }
    const parsed = failureExplanationView.strict().safeParse(answer);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new UpstreamError(
        `${input.providerId}: the answer does not fit the explanation shape (${issue?.path.join('.') || 'answer'}: ${issue?.message ?? 'invalid'})`,
        { providerId: input.providerId },
      );
    }
    return { explanation: parsed.data };
  }

  private async baseSections(deployment: DeploymentRecord, service: ServiceRecord): Promise<Array<[string, string]>> {
    const lines = await this.deps.store.deployments.listLogTail(deployment.id, LOG_LINES);
    let log = lines.map((l) => (l.stream === 'stderr' ? `[stderr] ${l.line}` : l.line)).join('\n');
    if (log.length > LOG_CHARS) log = `[…]${log.slice(-LOG_CHARS)}`;
    return [
      [
        'Deployment',
        JSON.stringify(
          {
            status: deployment.status,
            trigger: deployment.trigger,
            commitSha: deployment.commitSha,
            startedAt: deployment.startedAt?.toISOString() ?? null,
            finishedAt: deployment.finishedAt?.toISOString() ?? null,
          },
          null,
          2,
        ),
      ],
      ['Service build settings', JSON.stringify(buildSettings(service), null, 2)],
      ['Deployment log (tail)', log || '(empty)'],
    ];
  }

  private async runtimeTail(service: ServiceRecord): Promise<string> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), RUNTIME_LOG_WAIT_MS);
    try {
      for await (const event of this.runtimeLogs.follow(service.id, { tail: RUNTIME_LINES, signal: controller.signal })) {
        if (event.type === 'snapshot') return event.lines.map((l) => l.line).join('\n') || '(empty)';
        if (event.type === 'closed') return `(no running container: ${event.reason})`;
      }
      return '(not available)';
    } catch {
      return '(not available)';
    } finally {
      clearTimeout(timer);
      controller.abort();
    }
  }

  private async secretsOf(service: ServiceRecord): Promise<string[]> {
    const [resolved, secretValues] = await Promise.all([this.env.resolvedFor(service), this.env.secretValues(service)]);
    const secrets = secretEnvValues(resolved.env, secretValues);
    if (service.gitTokenEncrypted) secrets.push(this.deps.secrets.decrypt(service.gitTokenEncrypted));
    if (service.source.kind === 'storage') secrets.push(this.deps.secrets.decrypt(service.source.secretAccessKeyEncrypted));
    return secrets;
  }
}

/** What the service is built and run with; the source names no credential (tokens are stored apart). */
function buildSettings(service: ServiceRecord): Record<string, unknown> {
  const { source } = service;
  return {
    source:
      source.kind === 'repository'
        ? { kind: 'repository', repoFullName: source.repoFullName, repoUrl: source.repoUrl, branch: service.branch }
        : source.kind === 'image'
          ? { kind: 'image', image: source.image }
          : source.kind === 'storage'
            ? { kind: 'storage', bucket: source.bucket }
            : { kind: 'database', engine: source.engine },
    rootDir: service.rootDir,
    buildMethod: service.buildMethod,
    detectedBuildMethod: service.detectedBuildMethod,
    framework: service.framework,
    dockerfilePath: service.dockerfilePath,
    installCommand: service.installCommand,
    buildCommand: service.buildCommand,
    startCommand: service.startCommand,
    staticOutput: service.staticOutput,
    runtimeMode: service.runtimeMode,
    internalPort: service.internalPort,
  };
}
