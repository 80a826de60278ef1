import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, Navigate, useNavigate, useSearchParams } from 'react-router';
import { ErrorNotice, Field, Loading } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { useTRPC } from '../../lib/trpc';
import { AuthCard } from './auth-card';

/** Where to go after signing in: a path of this dashboard only, never another site. */
export function safeNext(next: string | null): string {
  return next?.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\') ? next : '/projects';
}

/** Email and password, then the second factor when the account has one. The session is the HttpOnly cookie sign-in sets. */
export default function SignIn() {
  const trpc = useTRPC();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [params] = useSearchParams();
  const system = useQuery(trpc.system.public.queryOptions());
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [challengeId, setChallengeId] = useState<string | null>(null);
  const done = async () => {
    await queryClient.invalidateQueries();
    navigate(safeNext(params.get('next')), { replace: true });
  };
  const signin = useMutation(
    trpc.auth.signin.mutationOptions({
      onSuccess: (result) => {
        if ('twoFactorRequired' in result) setChallengeId(result.challengeId);
        else void done();
      },
    }),
  );
  const verify = useMutation(trpc.auth.twoFactorVerify.mutationOptions({ onSuccess: () => void done() }));

  if (system.data && !system.data.ownerExists) return <Navigate to="/sign-up" replace />;
  if (system.isPending) return <Loading />;

  if (challengeId) {
    const submit = (e: FormEvent) => {
      e.preventDefault();
      verify.mutate({ challengeId, code: code.trim() });
    };
    return (
      <AuthCard title="Two-factor authentication">
        <form onSubmit={submit} noValidate>
          <p className="muted">Enter the 6-digit code from your authenticator app, or one of your recovery codes.</p>
          <Field
            label="Authentication code"
            name="code"
            value={code}
            onChange={setCode}
            error={verify.error}
            autoComplete="one-time-code"
            inputMode="numeric"
            required
            autoFocus
          />
          <ErrorNotice error={formError(verify.error, ['code']) && verify.error} />
          <div className="row">
            <button type="submit" className="primary" disabled={verify.isPending}>
              Verify
            </button>
            <button
              type="button"
              onClick={() => {
                setChallengeId(null);
                setCode('');
                verify.reset();
              }}
            >
              Back
            </button>
          </div>
        </form>
      </AuthCard>
    );
  }

  const submit = (e: FormEvent) => {
    e.preventDefault();
    signin.mutate({ email: email.trim(), password });
  };
  return (
    <AuthCard title="Sign in">
      {params.get('created') ? (
        <p className="alert ok" role="status">
          Your account is ready. Sign in with it.
        </p>
      ) : null}
      <form onSubmit={submit} noValidate>
        <Field
          label="Email"
          name="email"
          type="email"
          value={email}
          onChange={setEmail}
          error={signin.error}
          autoComplete="username"
          required
          autoFocus
        />
        <Field
          label="Password"
          name="password"
          type="password"
          value={password}
          onChange={setPassword}
          error={signin.error}
          autoComplete="current-password"
          required
        />
        <ErrorNotice error={formError(signin.error, ['email', 'password']) && signin.error} />
        <button type="submit" className="primary" disabled={signin.isPending}>
          Sign in
        </button>
      </form>
      <p>
        <Link to="/reset-password">Forgot your password?</Link>
      </p>
      {system.data?.registrationOpen ? (
        <p>
          No account? <Link to="/sign-up">Create an account</Link>
        </p>
      ) : null}
    </AuthCard>
  );
}
