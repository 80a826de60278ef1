import { z } from 'zod';
import { line } from '../platform/input-schemas.js';
import { MAX_ENVIRONMENT_NAME_LENGTH } from '../domain/environments.js';

/** What creating, renaming and cloning an environment take; the routers add the path parameters. */
export const environmentInput = z.strictObject({
  name: line(64)
    .min(1)
    .meta({
      description: `1 to ${MAX_ENVIRONMENT_NAME_LENGTH} lower-case letters, digits and single hyphens, starting with a letter ("staging", "pr-42"); unique in the project`,
    }),
});
export type EnvironmentInput = z.output<typeof environmentInput>;

export const environmentPatchInput = environmentInput.partial();
export type EnvironmentPatchInput = z.output<typeof environmentPatchInput>;
