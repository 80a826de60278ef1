import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { ErrorNotice, Field, Loading } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { useTRPC } from '../../lib/trpc';
import { AuthCard } from './auth-card';

/** The owner's account on a first start; later, a member's while the owner keeps registration open. */
export default function SignUp() {
  const trpc = useTRPC();
  const navigate = useNavigate();
  const system = useQuery(trpc.system.public.queryOptions());
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const queryClient = useQueryClient();
  const signup = useMutation(
    trpc.auth.signup.mutationOptions({
      onSuccess: async () => {
        // The installation has its owner now: sign-in must not send back here.
        await queryClient.invalidateQueries({ queryKey: trpc.system.public.queryKey() });
        navigate('/sign-in?created=1');
      },
    }),
  );
  if (system.isPending) return <Loading />;
  const first = system.data ? !system.data.ownerExists : false;
  if (system.data && !first && !system.data.registrationOpen) {
    return (
      <AuthCard title="Registration is closed">
        <p>Ask the owner of this installation for an account.</p>
        <Link to="/sign-in">Sign in</Link>
      </AuthCard>
    );
  }
  const submit = (e: FormEvent) => {
    e.preventDefault();
    signup.mutate({ name: name.trim(), email: email.trim(), password });
  };
  return (
    <AuthCard title={first ? 'Create the owner account' : 'Create an account'}>
      {first ? <p className="muted">This is a new installation: the first account owns it.</p> : null}
      <form onSubmit={submit} noValidate>
        <Field label="Name" name="name" value={name} onChange={setName} error={signup.error} autoComplete="name" required autoFocus />
        <Field
          label="Email"
          name="email"
          type="email"
          value={email}
          onChange={setEmail}
          error={signup.error}
          autoComplete="email"
          required
        />
        <Field
          label="Password"
          name="password"
          type="password"
          value={password}
          onChange={setPassword}
          error={signup.error}
          autoComplete="new-password"
          hint="At least 10 characters."
          required
        />
        <ErrorNotice error={formError(signup.error, ['name', 'email', 'password']) && signup.error} />
        <button type="submit" className="primary" disabled={signup.isPending}>
          {first ? 'Create owner account' : 'Create account'}
        </button>
      </form>
      {!first ? (
        <p>
          Have an account? <Link to="/sign-in">Sign in</Link>
        </p>
      ) : null}
    </AuthCard>
  );
}
