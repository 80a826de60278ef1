import { z } from 'zod';
import {
  forgotPasswordInput,
  resetPasswordInput,
  signinInput,
  signinResultView,
  signupInput,
  twoFactorDisableInput,
  twoFactorSetupView,
  twoFactorVerifyInput,
  userView,
  type SigninResult,
} from '../src/index.js';
import { okTrue } from './schemas.js';
import { optionalAuthProcedure, publicProcedure, readProcedure, router, writeProcedure, type Context } from './trpc.js';

const tags = ['Authentication'];
const noInput = z.strictObject({}).optional();

/** A completed sign-in also sets the session cookie, for browsers; scripts use the token in the body. */
function withCookie(ctx: Context, result: SigninResult): SigninResult {
  if ('session' in result) ctx.cookie?.set(result.session.token, new Date(result.session.expiresAt));
  return result;
}

export const authRouter = router({
  signup: publicProcedure
    .meta({
      scope: 'public',
      rateLimit: 'signup',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/auth/signup',
        tags,
        summary: 'Register an account; the first becomes the owner, later ones only while registration is open',
        description: '5 requests per minute per address. 403 `registration_closed`; 409 when the email address is taken.',
        protect: false,
      },
    })
    .input(signupInput)
    .output(z.object({ user: userView }))
    .mutation(async ({ ctx, input }) => ({ user: await ctx.services.accounts.signup(input) })),

  signin: publicProcedure
    .meta({
      scope: 'public',
      rateLimit: 'signin',
      openapi: {
        method: 'POST',
        path: '/api/auth/signin',
        tags,
        summary: 'Sign in: a session (also set as an HttpOnly cookie), or a second-factor challenge',
        description:
          '10 requests per minute per address; repeated failures for one account back off. 401 `invalid_credentials` alike for an unknown email and a wrong password.',
        protect: false,
      },
    })
    .input(signinInput)
    .output(signinResultView)
    .mutation(async ({ ctx, input }) => withCookie(ctx, await ctx.services.accounts.signin(input, ctx.ip))),

  logout: readProcedure
    .meta({
      scope: 'session',
      openapi: { method: 'POST', path: '/api/auth/logout', tags, summary: 'End the current session and clear its cookie' },
    })
    .input(noInput)
    .output(okTrue)
    .mutation(async ({ ctx }) => {
      await ctx.services.accounts.logout(ctx.actor);
      ctx.cookie?.clear();
      return { ok: true as const };
    }),

  forgotPassword: publicProcedure
    .meta({
      scope: 'public',
      rateLimit: 'password-reset',
      openapi: {
        method: 'POST',
        path: '/api/auth/forgot-password',
        tags,
        summary: 'Mail a password-reset link (valid 1 hour, once) when the account exists; always 200',
        description: '3 requests per minute per address, shared with reset-password.',
        protect: false,
      },
    })
    .input(forgotPasswordInput)
    .output(okTrue)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.accounts.forgotPassword(input.email);
      return { ok: true as const };
    }),

  resetPassword: publicProcedure
    .meta({
      scope: 'public',
      rateLimit: 'password-reset',
      openapi: {
        method: 'POST',
        path: '/api/auth/reset-password',
        tags,
        summary: 'Set a new password with the token of a reset link; ends every session of the account',
        description: '400 with `details.field` `token` when the token is unknown, expired or used.',
        protect: false,
      },
    })
    .input(resetPasswordInput)
    .output(okTrue)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.accounts.resetPassword(input.token, input.password);
      return { ok: true as const };
    }),

  twoFactorSetup: writeProcedure
    .meta({
      scope: 'session',
      openapi: {
        method: 'POST',
        path: '/api/auth/2fa/setup',
        tags,
        summary: 'Start two-factor setup: the TOTP secret, its otpauth URI and QR code, and 10 recovery codes, shown once',
        description: 'Active only once POST /api/auth/2fa/verify confirms a first code.',
      },
    })
    .input(noInput)
    .output(twoFactorSetupView)
    .mutation(async ({ ctx }) => ctx.services.twoFactor.setup(ctx.actor)),

  twoFactorVerify: optionalAuthProcedure
    .meta({
      scope: 'public',
      rateLimit: 'signin',
      openapi: {
        method: 'POST',
        path: '/api/auth/2fa/verify',
        tags,
        summary: 'With challengeId: finish a sign-in with a code or recovery code. Without, signed in: confirm a setup',
        description: 'Counts against the sign-in budget (10 per minute per address); a challenge ends after 5 wrong codes.',
        protect: false,
      },
    })
    .input(twoFactorVerifyInput)
    .output(z.union([signinResultView, okTrue]))
    .mutation(async ({ ctx, input }) => {
      if (input.challengeId) return withCookie(ctx, await ctx.services.accounts.completeChallenge(input.challengeId, input.code, ctx.ip));
      await ctx.services.accounts.confirmTwoFactor(ctx.actor, input.code);
      return { ok: true as const };
    }),

  twoFactorDisable: writeProcedure
    .meta({
      scope: 'session',
      openapi: { method: 'POST', path: '/api/auth/2fa/disable', tags, summary: 'Turn two-factor authentication off, with a current code' },
    })
    .input(twoFactorDisableInput)
    .output(okTrue)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.twoFactor.disable(ctx.actor, input.code);
      return { ok: true as const };
    }),
});
