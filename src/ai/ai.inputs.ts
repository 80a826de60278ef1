import { z } from 'zod';
import { idParam, line } from '../platform/input-schemas.js';

/** What explain-failure and diagnostics take: a connected provider and one of its models. */
export const aiRequestInput = z.strictObject({
  deploymentId: idParam,
  providerId: line(64).min(1).meta({ description: 'A connected AI provider (settings `aiProviders`)' }),
  model: line(200).min(1).meta({ description: "The provider's model name, sent as is" }),
});
export type AiRequestInput = z.output<typeof aiRequestInput>;
