import { z } from 'zod';
import { timestamp } from '../platform/view-fields.js';

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
    status: z
      .enum(['ok', 'degraded'])
      .meta({ description: '`degraded` when the engine, the proxy or the database is down, or a notification channel is failing' }),
    engine: componentHealthView.meta({ description: 'The Docker engine (DOCKER_SOCKET)' }),
    proxy: componentHealthView.meta({ description: 'The reverse proxy (Caddy admin API)' }),
    database: componentHealthView.meta({ description: 'SQLite or PostgreSQL' }),
    notifications: componentHealthView.meta({
      description: 'The notification channels: `down` while one is `failing` (its last 5 deliveries failed), `disabled` with none',
    }),
    checkedAt: timestamp.meta({ description: 'When the checks ran; answers are cached for a few seconds' }),
  })
  .meta({ id: 'Health' });
export type HealthView = z.infer<typeof healthView>;
