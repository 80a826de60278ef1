import { z } from 'zod';
import { DEPLOYMENT_STATUSES } from '../domain/deployment-state.js';
import { ERROR_CODES } from '../domain/errors.js';
import {
  ACCESS_LEVELS,
  BUILD_METHODS,
  DEPLOYMENT_TRIGGERS,
  DETECTED_BUILD_METHODS,
  DOMAIN_STATUSES,
  LOG_STREAMS,
  PROJECT_STATUSES,
  RUNTIME_MODES,
  SERVICE_STATUSES,
} from '../domain/types.js';

/**
 * The wire shapes of the API, one schema each: routers use them as tRPC outputs and
 * trpc-to-openapi documents them, so the typed client, REST and the document agree.
 * Timestamps are ISO 8601 UTC strings with milliseconds through every door.
 */
const timestamp = z.string().meta({ description: 'ISO 8601 UTC timestamp with milliseconds', example: '2026-11-21T12:00:00.000Z' });

export const proxyResultView = z
  .object({ ok: z.boolean(), detail: z.string() })
  .meta({ id: 'ProxyResult', description: 'Outcome of reloading the reverse proxy' });
export type ProxyResultView = z.infer<typeof proxyResultView>;

export const serviceView = z
  .object({
    id: z.string(),
    projectId: z.string(),
    environmentId: z.string().meta({ description: "The project's environment the service lives in" }),
    name: z.string(),
    slug: z.string(),
    repoFullName: z.string().nullable(),
    repoUrl: z.string().nullable(),
    containerImage: z.string().nullable(),
    branch: z.string(),
    rootDir: z.string().nullable(),
    hasGitToken: z.boolean(),
    installCommand: z.string().nullable(),
    buildCommand: z.string().nullable(),
    startCommand: z.string().nullable(),
    staticOutput: z.string().nullable(),
    buildMethod: z.enum(BUILD_METHODS),
    dockerfilePath: z.string().nullable(),
    detectedBuildMethod: z.enum(DETECTED_BUILD_METHODS).nullable(),
    runtimeMode: z.enum(RUNTIME_MODES),
    internalPort: z.number().int(),
    hostPort: z.number().int(),
    databasePublicEnabled: z.boolean(),
    databasePublicHostname: z.string().nullable(),
    postgresLogicalReplicationEnabled: z.boolean(),
    status: z.enum(SERVICE_STATUSES),
    reachable: z.boolean(),
    localUrl: z.string(),
    primaryUrl: z.string(),
    preferredDomain: z.string().nullable(),
    framework: z.string().nullable(),
    lastDeployedAt: timestamp.nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Service' });
export type ServiceView = z.infer<typeof serviceView>;

export const projectView = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string(),
    description: z.string(),
    status: z.enum(PROJECT_STATUSES),
    serviceCount: z.number().int(),
    lastUpdatedAt: timestamp,
    services: z.array(serviceView),
  })
  .meta({ id: 'Project' });
export type ProjectView = z.infer<typeof projectView>;

/** A page of GET /api/projects: nextCursor is null on the last page. */
export const projectPage = z.object({
  projects: z.array(projectView),
  nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page' }),
});
export type ProjectPage = z.infer<typeof projectPage>;

export const envVarView = z
  .object({
    id: z.string(),
    key: z.string(),
    hasValue: z.boolean(),
    secret: z.boolean(),
    value: z.string().meta({ description: 'The raw value; empty for secret variables' }),
    resolvedValue: z.string().meta({
      description: 'The value with ${service_slug.KEY} references expanded; empty when it is or uses a secret',
    }),
    problems: z.array(z.string()).meta({ description: 'References that could not be resolved (unknown service or key, cycle)' }),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'EnvironmentVariable' });
export type EnvVarView = z.infer<typeof envVarView>;

export const domainView = z
  .object({
    id: z.string(),
    serviceId: z.string(),
    hostname: z.string(),
    status: z.enum(DOMAIN_STATUSES),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Domain' });
export type DomainView = z.infer<typeof domainView>;

export const deploymentView = z
  .object({
    id: z.string(),
    serviceId: z.string(),
    commitSha: z.string().nullable(),
    status: z.enum(DEPLOYMENT_STATUSES),
    trigger: z.enum(DEPLOYMENT_TRIGGERS),
    imageTag: z.string().nullable(),
    containerName: z.string().nullable(),
    rollbackOf: z.string().nullable().meta({ description: 'For `trigger: "rollback"`: the deployment whose image runs again' }),
    startedAt: timestamp.nullable(),
    finishedAt: timestamp.nullable(),
    createdAt: timestamp,
  })
  .meta({ id: 'Deployment' });
export type DeploymentView = z.infer<typeof deploymentView>;

export const deploymentLogView = z
  .object({
    id: z.number().int(),
    deploymentId: z.string(),
    line: z.string(),
    stream: z.enum(LOG_STREAMS),
    createdAt: timestamp,
  })
  .meta({ id: 'DeploymentLogLine' });
export type DeploymentLogView = z.infer<typeof deploymentLogView>;

/** A container's output line: a deployment log line without the deployment. */
export const runtimeLogView = deploymentLogView.omit({ deploymentId: true }).meta({ id: 'RuntimeLogLine' });
export type RuntimeLogView = z.infer<typeof runtimeLogView>;

/** A storage instance's key pair, in the answers that make one (create, and an environment's clone) and nowhere else. */
export const storageCredentialsView = z
  .object({
    accessKeyId: z.string(),
    secretAccessKey: z.string().meta({ description: 'Shown in this answer only: it is stored encrypted and never returned again' }),
  })
  .meta({ id: 'StorageCredentials' });

export const suggestionView = z.object({ key: z.string(), value: z.string().optional(), label: z.string() }).meta({ id: 'Suggestion' });
export type SuggestionView = z.infer<typeof suggestionView>;

export const apiKeyView = z
  .object({
    id: z.string(),
    name: z.string(),
    access: z.enum(ACCESS_LEVELS),
    projectIds: z.array(z.string()).nullable().meta({ description: 'null: all projects' }),
    prefix: z.string(),
    createdAt: timestamp,
    lastUsedAt: timestamp.nullable(),
  })
  .meta({ id: 'ApiKey' });
export type ApiKeyView = z.infer<typeof apiKeyView>;

export const errorView = z
  .object({
    error: z.enum(ERROR_CODES),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).meta({ description: 'For validation errors, `field` names the first offending field' }),
  })
  .meta({ id: 'Error' });

export const DNS_PROVIDER_IDS = ['cloudflare', 'digitalocean', 'hetzner'] as const;

export const AI_PROVIDER_KINDS = ['openai', 'anthropic'] as const;
export type AiProviderKind = (typeof AI_PROVIDER_KINDS)[number];
export const licenseView = z
  .object({
    valid: z.boolean().meta({ description: 'A verified license that has not expired is active' }),
    licensee: z.string().nullable(),
    plan: z.string().nullable(),
    expiresAt: timestamp.nullable(),
  })
  .meta({ id: 'License', description: 'All null and valid false when no license was activated: the platform works without one' });
export type LicenseView = z.infer<typeof licenseView>;

export const publicSystemView = z
  .object({
    version: z.string(),
    registrationOpen: z.boolean(),
    ownerExists: z
      .boolean()
      .meta({ description: 'false until the first account (the owner) signs up: the dashboard then offers owner sign-up' }),
    features: z.array(z.string()).meta({ description: 'Enabled features: `databases`, `deployments`, `reverse-proxy`, `dns`' }),
    license: licenseView,
  })
  .meta({ id: 'PublicSystem' });
export type PublicSystemView = z.infer<typeof publicSystemView>;

export const sharedVariableView = z
  .object({
    secret: z.boolean(),
    value: z.string().meta({ description: 'The raw value; empty for secret variables' }),
    updatedAt: timestamp,
  })
  .meta({ id: 'SharedVariable' });
export type SharedVariableView = z.infer<typeof sharedVariableView>;
export const sharedEnvView = z
  .record(z.string(), sharedVariableView)
  .meta({ id: 'SharedEnvironment', description: 'Shared project variables by key' });
export type SharedEnvView = z.infer<typeof sharedEnvView>;

export const settingsView = z
  .object({
    license: licenseView,
    publicIp: z.string(),
    rootDomain: z.string().nullable(),
    registrationOpen: z.boolean().meta({ description: 'Whether anyone may sign up once the owner exists' }),
    smtpConfigured: z.boolean().meta({ description: 'An SMTP server is set here (its URL is write-only); else SMTP_URL applies' }),
    mailFrom: z.string().nullable(),
    dnsProviders: z.array(
      z.object({
        providerId: z.enum(DNS_PROVIDER_IDS),
        providerName: z.string(),
        hasApiToken: z.boolean(),
        connectedAt: timestamp,
      }),
    ),
    aiProviders: z.array(
      z.object({
        providerId: z.string(),
        kind: z.enum(AI_PROVIDER_KINDS).meta({
          description: '`openai`: the Chat Completions wire format (also compatible local servers); `anthropic`: the Messages API',
        }),
        baseUrl: z.string().nullable().meta({ description: "null: the vendor's own API" }),
        hasApiKey: z.boolean(),
        connectedAt: timestamp,
      }),
    ),
    objectStore: z
      .object({
        endpoint: z.string(),
        region: z.string(),
        bucket: z.string(),
        accessKeyId: z.string(),
        forcePathStyle: z.boolean(),
        hasSecretAccessKey: z.boolean(),
      })
      .nullable()
      .meta({ description: 'The S3-compatible store backups go to; the secret is never shown' }),
  })
  .meta({ id: 'Settings' });
export type SettingsView = z.infer<typeof settingsView>;

/** The spec's Failure explanation: what an AI provider made of a failed (or misbehaving) deployment. */
export const failureExplanationView = z
  .object({
    summary: z.string().min(1).max(4_000),
    likelyCause: z.string().min(1).max(4_000),
    suggestedFix: z.string().min(1).max(8_000),
    commands: z.array(z.string().max(1_000)).max(20),
  })
  .meta({ id: 'FailureExplanation' });
export type FailureExplanationView = z.infer<typeof failureExplanationView>;

const metricValues = {
  cpuPercent: z.number().meta({ description: 'CPU use; 100 is one core' }),
  memoryUsedBytes: z.number().int().meta({ description: 'Memory in use (page cache excluded)' }),
  memoryLimitBytes: z.number().int().meta({ description: "The container's limit, or the host's memory without one" }),
  netRxBytes: z.number().int(),
  netTxBytes: z.number().int(),
  blockReadBytes: z.number().int(),
  blockWriteBytes: z.number().int(),
  restarts: z.number().int().meta({ description: 'Restarts of the running container(s) by the engine' }),
};
export const metricPointView = z
  .object({
    at: timestamp.meta({ description: 'Start of the step' }),
    ...metricValues,
    requests: z
      .number()
      .int()
      .meta({ description: "Requests the proxy answered for the service's hostnames during the step (web services)" }),
    errors5xx: z.number().int().meta({ description: 'Of those, answers with a 5xx status' }),
  })
  .meta({
    id: 'MetricPoint',
    description:
      'One step: CPU and memory averaged; network and block I/O bytes moved and requests answered during the step; restarts as counted at its end. The newest step includes the minute under way',
  });
export type MetricPointView = z.infer<typeof metricPointView>;
export const metricsView = z
  .object({
    serviceId: z.string(),
    running: z.boolean(),
    intervalMs: z.number().int().meta({ description: 'Sampling interval (METRICS_INTERVAL_MS); 0 when sampling is off' }),
    current: z
      .object({ at: timestamp, ...metricValues })
      .nullable()
      .meta({ description: 'The latest sample; byte counters are cumulative since the container started. null when no container runs' }),
    series: z.object({
      from: timestamp,
      to: timestamp,
      step: z.number().int().meta({ description: 'Seconds per point' }),
      points: z.array(metricPointView).meta({ description: 'Oldest first; steps without samples are left out' }),
    }),
  })
  .meta({ id: 'ServiceMetrics' });
export type MetricsView = z.infer<typeof metricsView>;

export const dnsRecordResultView = z
  .object({
    provider: z.string(),
    providerName: z.string(),
    action: z.enum(['created', 'updated', 'unchanged']),
    hostname: z.string(),
    recordType: z.literal('A'),
    host: z.string(),
    zone: z.string(),
    targetIp: z.string(),
  })
  .meta({ id: 'DnsRecordResult' });
export type DnsRecordResultView = z.infer<typeof dnsRecordResultView>;

const componentHealthView = z.object({
  status: z
    .enum(['up', 'down', 'disabled'])
    .meta({ description: '`disabled`: not used by this install (PROXY=none, or no container engine wired)' }),
  detail: z.string().meta({ description: 'Why: the error when down, what answered when up' }),
});
export const healthView = z
  .object({
    ok: z
      .literal(true)
      .meta({ description: 'The API answers (always true: a down dependency is reported in `status`, not by failing this call)' }),
    status: z.enum(['ok', 'degraded']).meta({ description: '`degraded` when the engine, the proxy or the database is down' }),
    engine: componentHealthView.meta({ description: 'The Docker engine (DOCKER_SOCKET)' }),
    proxy: componentHealthView.meta({ description: 'The reverse proxy (Caddy admin API)' }),
    database: componentHealthView.meta({ description: 'SQLite or PostgreSQL' }),
    checkedAt: timestamp.meta({ description: 'When the checks ran; answers are cached for a few seconds' }),
  })
  .meta({ id: 'Health' });
export type HealthView = z.infer<typeof healthView>;
