import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { ErrorNotice, Field } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { useTRPC } from '../../lib/trpc';
import { AuthCard } from './auth-card';

/** The page of the reset link the platform mails (`<APP_URL>/reset-password?token=...`), and the request for one. */
export default function ResetPassword() {
  const trpc = useTRPC();
  const [params] = useSearchParams();
  const token = params.get('token');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const forgot = useMutation(trpc.auth.forgotPassword.mutationOptions());
  const reset = useMutation(trpc.auth.resetPassword.mutationOptions());
  if (!token) {
    const submit = (e: FormEvent) => {
      e.preventDefault();
      forgot.mutate({ email: email.trim() });
    };
    return (
      <AuthCard title="Reset your password">
        {forgot.isSuccess ? (
          <p role="status">If an account has this address, a link to reset its password is on its way. It works once, for one hour.</p>
        ) : (
          <form onSubmit={submit} noValidate>
            <Field
              label="Email"
              name="email"
              type="email"
              value={email}
              onChange={setEmail}
              error={forgot.error}
              autoComplete="email"
              required
            />
            <ErrorNotice error={formError(forgot.error, ['email']) && forgot.error} />
            <button type="submit" className="primary" disabled={forgot.isPending}>
              Send reset link
            </button>
          </form>
        )}
        <p>
          <Link to="/sign-in">Back to sign-in</Link>
        </p>
      </AuthCard>
    );
  }
  const submit = (e: FormEvent) => {
    e.preventDefault();
    reset.mutate({ token, password });
  };
  return (
    <AuthCard title="Choose a new password">
      {reset.isSuccess ? (
        <p role="status">
          Your password is changed and every session of the account has ended. <Link to="/sign-in">Sign in</Link>
        </p>
      ) : (
        <form onSubmit={submit} noValidate>
          <Field
            label="New password"
            name="password"
            type="password"
            value={password}
            onChange={setPassword}
            error={reset.error}
            autoComplete="new-password"
            required
          />
          <ErrorNotice error={formError(reset.error, ['password']) && reset.error} />
          <button type="submit" className="primary" disabled={reset.isPending}>
            Set password
          </button>
        </form>
      )}
    </AuthCard>
  );
}
