import { z } from 'zod';
import { timestamp } from '../platform/view-fields.js';

/** A service's variables and a project's shared ones, as the routers answer them. */

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
