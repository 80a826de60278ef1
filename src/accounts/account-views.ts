import { z } from 'zod';
import { ROLES, SCOPES } from '../domain/scopes.js';
import { ACCESS_LEVELS } from '../domain/types.js';
import { line } from '../platform/input-schemas.js';
import { timestamp } from '../platform/view-fields.js';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './password.js';

/** The account shapes, inputs and outputs, declared once: the routers use them, the use cases take the parsed types. */

export const userView = z
  .object({
    id: z.string(),
    email: z.string(),
    name: z.string(),
    role: z.enum(ROLES),
    twoFactorEnabled: z.boolean(),
    createdAt: timestamp,
  })
  .meta({ id: 'User' });
export type UserView = z.infer<typeof userView>;

export const sessionView = z.object({
  token: z.string().meta({ description: 'Also set as the HttpOnly session cookie; send as `Authorization: Bearer` from scripts' }),
  expiresAt: timestamp.meta({ description: 'Sliding: each use moves it forward by the session lifetime' }),
});

export const signinResultView = z
  .union([
    z.object({ user: userView, session: sessionView }),
    z.object({
      twoFactorRequired: z.literal(true),
      challengeId: z.string().meta({ description: 'Send it with a code to POST /api/auth/2fa/verify within 5 minutes' }),
    }),
  ])
  .meta({ id: 'SigninResult' });
export type SigninResult = z.infer<typeof signinResultView>;

export const personalTokenView = z
  .object({
    id: z.string(),
    name: z.string(),
    scopes: z.array(z.enum(SCOPES)),
    prefix: z.string().meta({ description: 'The first characters of the token, to recognise it' }),
    createdAt: timestamp,
    lastUsedAt: timestamp.nullable(),
    expiresAt: timestamp.nullable(),
  })
  .meta({ id: 'PersonalToken' });
export type PersonalTokenView = z.infer<typeof personalTokenView>;

export const twoFactorSetupView = z.object({
  secret: z.string().meta({ description: 'Base32; shown once' }),
  otpauthUri: z.string(),
  qrCode: z.string().meta({ description: 'PNG data URL of the otpauth URI' }),
  recoveryCodes: z.array(z.string()).meta({ description: '10 single-use codes, shown once' }),
});
export type TwoFactorSetupView = z.infer<typeof twoFactorSetupView>;

const email = line(320)
  .min(3)
  .regex(/^[^\s@]+@[^\s@]+$/, { message: 'must be an email address' });
const password = z
  .string()
  .min(PASSWORD_MIN_LENGTH, { message: `must be at least ${PASSWORD_MIN_LENGTH} characters` })
  .max(PASSWORD_MAX_LENGTH);
const code = line(32).min(1).meta({ description: 'A 6-digit code from the authenticator app, or a recovery code' });

export const signupInput = z.strictObject({ email, password, name: line(100).min(1) });
export type SignupInput = z.output<typeof signupInput>;
/** Sign-in takes any string: a too-short password is a wrong one, not a validation error that tells the rules apply. */
export const signinInput = z.strictObject({ email: line(320).min(1), password: z.string().min(1).max(PASSWORD_MAX_LENGTH) });
export type SigninInput = z.output<typeof signinInput>;
export const forgotPasswordInput = z.strictObject({ email: line(320).min(1) });
export const resetPasswordInput = z.strictObject({ token: line(128).min(1), password });
export const twoFactorVerifyInput = z.strictObject({
  challengeId: line(128).min(1).optional().meta({ description: 'From signin; omit to confirm a setup (signed in)' }),
  code,
});
export const twoFactorDisableInput = z.strictObject({ code });
export const personalTokenInput = z.strictObject({
  name: line(100).min(1),
  scopes: z.array(z.enum(SCOPES)).min(1).max(SCOPES.length),
  expiresAt: z.iso.datetime({ offset: true }).optional().meta({ description: 'ISO 8601; omitted: never expires' }),
});
export type PersonalTokenInput = z.output<typeof personalTokenInput>;
export const roleInput = z.enum(['admin', 'member']);

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
