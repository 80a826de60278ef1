import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { CopyButton, ErrorNotice, Field, QueryState } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { type RouterOutputs, useTRPC } from '../../lib/trpc';

/** The signed-in account, and its second factor: set up with a QR code and confirmed with a first code, or turned off. */
export default function Account() {
  const trpc = useTRPC();
  const me = useQuery(trpc.user.me.queryOptions());
  return (
    <QueryState query={me} label="your account">
      {({ user }) => (
        <div className="stack">
          <section className="card" aria-labelledby="acct-h">
            <h2 id="acct-h">Account</h2>
            <dl className="kv">
              <dt>Name</dt>
              <dd>{user.name}</dd>
              <dt>Email</dt>
              <dd>{user.email}</dd>
              <dt>Role</dt>
              <dd>{user.role}</dd>
            </dl>
          </section>
          <TwoFactor enabled={user.twoFactorEnabled} />
        </div>
      )}
    </QueryState>
  );
}

function TwoFactor({ enabled }: { enabled: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [setup, setSetup] = useState<RouterOutputs['auth']['twoFactorSetup'] | null>(null);
  const [code, setCode] = useState('');
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.user.me.queryKey() });
  const start = useMutation(trpc.auth.twoFactorSetup.mutationOptions({ onSuccess: setSetup }));
  const verify = useMutation(
    trpc.auth.twoFactorVerify.mutationOptions({
      onSuccess: async () => {
        setCode('');
        await refresh();
      },
    }),
  );
  const disable = useMutation(
    trpc.auth.twoFactorDisable.mutationOptions({
      onSuccess: async () => {
        setCode('');
        setSetup(null);
        await refresh();
      },
    }),
  );

  if (enabled) {
    const submit = (e: FormEvent) => {
      e.preventDefault();
      disable.mutate({ code: code.trim() });
    };
    return (
      <section className="card" aria-labelledby="tfa-h">
        <h2 id="tfa-h">Two-factor authentication</h2>
        {verify.isSuccess && setup ? (
          <div className="alert ok" role="status">
            Two-factor authentication is on. Keep your recovery codes somewhere safe.
          </div>
        ) : (
          <p>
            <span className="badge ok">on</span> Signing in asks for a code from your authenticator app.
          </p>
        )}
        {setup ? <RecoveryCodes codes={setup.recoveryCodes} /> : null}
        <form className="inline" onSubmit={submit} noValidate>
          <Field
            label="Current code"
            name="code"
            value={code}
            onChange={setCode}
            error={disable.error}
            autoComplete="one-time-code"
            inputMode="numeric"
          />
          <button type="submit" disabled={disable.isPending || !code.trim()}>
            Turn off two-factor authentication
          </button>
        </form>
        <ErrorNotice error={formError(disable.error, ['code']) && disable.error} />
      </section>
    );
  }

  const submit = (e: FormEvent) => {
    e.preventDefault();
    verify.mutate({ code: code.trim() });
  };
  return (
    <section className="card" aria-labelledby="tfa-h">
      <h2 id="tfa-h">Two-factor authentication</h2>
      {!setup ? (
        <>
          <p>
            <span className="badge neutral">off</span> Add a second step to sign-in: a code from an authenticator app.
          </p>
          <button type="button" className="primary" onClick={() => start.mutate()} disabled={start.isPending}>
            Set up two-factor authentication
          </button>
          <ErrorNotice error={start.error} />
        </>
      ) : (
        <div className="stack">
          <p>Scan the QR code with your authenticator app, or enter the key by hand, then type the code it shows.</p>
          <img className="qr" src={setup.qrCode} alt={`QR code for your authenticator app. The key is ${setup.secret}`} />
          <p>
            Key: <code data-testid="totp-secret">{setup.secret}</code> <CopyButton value={setup.secret} label="Copy key" />
          </p>
          <RecoveryCodes codes={setup.recoveryCodes} />
          <form className="inline" onSubmit={submit} noValidate>
            <Field
              label="Code from the app"
              name="code"
              value={code}
              onChange={setCode}
              error={verify.error}
              autoComplete="one-time-code"
              inputMode="numeric"
            />
            <button type="submit" className="primary" disabled={verify.isPending || !code.trim()}>
              Turn on two-factor authentication
            </button>
          </form>
          <ErrorNotice error={formError(verify.error, ['code']) && verify.error} />
        </div>
      )}
    </section>
  );
}

function RecoveryCodes({ codes }: { codes: string[] }) {
  return (
    <div>
      <h3>Recovery codes</h3>
      <p className="muted">Each works once in place of a code. They are shown this once.</p>
      <pre className="secret-once">{codes.join('\n')}</pre>
      <CopyButton value={codes.join('\n')} label="Copy recovery codes" />
    </div>
  );
}
