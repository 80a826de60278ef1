import { z } from 'zod';
import { DEPLOYMENT_STATUSES } from '../domain/deployment-state.js';
import { DEPLOYMENT_TRIGGERS, LOG_STREAMS, type DeploymentLogRecord, type DeploymentRecord } from '../domain/types.js';
import { iso, isoOrNull, timestamp } from '../platform/view-fields.js';

/** Deployments and their log lines (a container's runtime lines too), as the routers and streams answer them. */

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
    commitMessage: z.string().nullable().meta({ description: 'For a push, poll or preview: the commit built' }),
    commitAuthor: z.string().nullable(),
    provider: z
      .string()
      .nullable()
      .meta({ description: 'Who asked: github, gitlab, gitea, forgejo, bitbucket, generic, dockerhub; git or registry for polling' }),
    deliveryId: z.string().nullable().meta({ description: "The webhook delivery that made it (the sender's delivery id)" }),
    imageDigest: z.string().nullable().meta({ description: 'For an image deployed on a new digest: exactly the digest pulled' }),
    previewId: z.string().nullable().meta({ description: 'The pull-request preview it deploys' }),
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

/** A page of a deployment's log: at most this many lines per read when a limit is given. */
export const LOG_PAGE_MAX = 10_000;

/** A container's output line: a deployment log line without the deployment. */
export const runtimeLogView = deploymentLogView.omit({ deploymentId: true }).meta({ id: 'RuntimeLogLine' });
export type RuntimeLogView = z.infer<typeof runtimeLogView>;

export function presentDeployment(deployment: DeploymentRecord): DeploymentView {
  return {
    id: deployment.id,
    serviceId: deployment.serviceId,
    commitSha: deployment.commitSha,
    status: deployment.status,
    trigger: deployment.trigger,
    imageTag: deployment.imageTag,
    containerName: deployment.containerName,
    rollbackOf: deployment.rollbackOf,
    commitMessage: deployment.origin?.commitMessage ?? null,
    commitAuthor: deployment.origin?.commitAuthor ?? null,
    provider: deployment.origin?.provider ?? null,
    deliveryId: deployment.origin?.deliveryId ?? null,
    imageDigest: deployment.origin?.imageDigest ?? null,
    previewId: deployment.origin?.previewId ?? null,
    startedAt: isoOrNull(deployment.startedAt),
    finishedAt: isoOrNull(deployment.finishedAt),
    createdAt: iso(deployment.createdAt),
  };
}

export function presentLogLine(line: DeploymentLogRecord): DeploymentLogView {
  return { id: line.id, deploymentId: line.deploymentId, line: line.line, stream: line.stream, createdAt: iso(line.createdAt) };
}
