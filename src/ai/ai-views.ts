import { z } from 'zod';

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
