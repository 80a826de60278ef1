import { z } from 'zod';
import { PREVIEW_DATABASE_MODES } from '../domain/deploy-triggers.js';
import { PREVIEW_PHASES, PREVIEW_STATUSES, type PreviewRecord } from './preview.records.js';

const timestamp = z.string().meta({ description: 'ISO 8601 UTC timestamp with milliseconds', example: '2026-11-21T12:00:00.000Z' });

export const previewView = z
  .object({
    id: z.string(),
    projectId: z.string(),
    number: z.number().int().meta({ description: 'The pull (merge) request number; the environment is `pr-<number>`' }),
    provider: z.string(),
    title: z.string().nullable(),
    environmentId: z.string().nullable(),
    status: z.enum(PREVIEW_STATUSES).meta({
      description: '`deploying`, `ready`, `failed` (statusReason says why), `limited` (past previews.maxOpen: nothing was made)',
    }),
    phase: z.enum(PREVIEW_PHASES),
    statusReason: z.string().nullable(),
    url: z.string().nullable().meta({ description: "The previewed service's generated URL (`${PREVIEW_URL}`)" }),
    headSha: z.string(),
    headBranch: z.string(),
    fromFork: z.boolean(),
    services: z.array(
      z.object({ parentServiceId: z.string(), previewServiceId: z.string().nullable(), role: z.enum(['previewed', 'sibling']) }),
    ),
    databases: z.array(
      z.object({
        parentServiceId: z.string(),
        previewServiceId: z.string().nullable(),
        mode: z.enum(PREVIEW_DATABASE_MODES),
        filledFrom: z
          .string()
          .nullable()
          .meta({ description: '`backup <id>`, `a fresh dump`, `nothing (empty)`, `shared with the parent`, or why the copy was refused' }),
      }),
    ),
    lastPushAt: timestamp,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Preview' });
export type PreviewView = z.infer<typeof previewView>;

export function presentPreview(preview: PreviewRecord): PreviewView {
  return {
    id: preview.id,
    projectId: preview.projectId,
    number: preview.number,
    provider: preview.provider,
    title: preview.title,
    environmentId: preview.environmentId,
    status: preview.status,
    phase: preview.phase,
    statusReason: preview.statusReason,
    url: preview.url,
    headSha: preview.headSha,
    headBranch: preview.headBranch,
    fromFork: preview.fromFork,
    services: preview.services,
    databases: preview.databases,
    lastPushAt: preview.lastPushAt.toISOString(),
    createdAt: preview.createdAt.toISOString(),
    updatedAt: preview.updatedAt.toISOString(),
  };
}
