import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { ErrorNotice, Field, QueryState } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { type RouterOutputs, useTRPC } from '../../lib/trpc';
import { RegistrySettings } from './registry-form';

type Settings = RouterOutputs['settings']['get']['settings'];
const FIELDS = ['publicIp', 'rootDomain', 'registrationOpen', 'smtpUrl', 'mailFrom'];

/** The installation's settings: address, root domain, registration, mail; what is connected (DNS, AI, object store). */
export default function Platform() {
  const trpc = useTRPC();
  const settings = useQuery(trpc.settings.get.queryOptions());
  const system = useQuery(trpc.system.public.queryOptions());
  return (
    <div className="stack">
      <QueryState query={settings} label="settings">
        {({ settings: s }) => <SettingsForm settings={s} />}
      </QueryState>
      <RegistrySettings />
      {system.data ? (
        <section className="card" aria-labelledby="sys-h">
          <h2 id="sys-h">About</h2>
          <dl className="kv">
            <dt>Version</dt>
            <dd>{system.data.version}</dd>
            <dt>Features</dt>
            <dd>{system.data.features.join(', ')}</dd>
            <dt>License</dt>
            <dd>{system.data.license.valid ? `${system.data.license.plan} for ${system.data.license.licensee}` : 'none'}</dd>
          </dl>
        </section>
      ) : null}
    </div>
  );
}

function SettingsForm({ settings }: { settings: Settings }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [publicIp, setPublicIp] = useState(settings.publicIp);
  const [rootDomain, setRootDomain] = useState(settings.rootDomain ?? '');
  const [registrationOpen, setRegistrationOpen] = useState(settings.registrationOpen);
  const [mailFrom, setMailFrom] = useState(settings.mailFrom ?? '');
  const [smtpUrl, setSmtpUrl] = useState('');
  const update = useMutation(
    trpc.settings.update.mutationOptions({
      onSuccess: () => {
        setSmtpUrl('');
        return queryClient.invalidateQueries({ queryKey: trpc.settings.get.queryKey() });
      },
    }),
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    update.mutate({
      publicIp: publicIp.trim() || null,
      rootDomain: rootDomain.trim() || null,
      registrationOpen,
      mailFrom: mailFrom.trim() || null,
      ...(smtpUrl.trim() ? { smtpUrl: smtpUrl.trim() } : {}),
    });
  };
  return (
    <>
      <section className="card" aria-labelledby="plat-h">
        <h2 id="plat-h">Platform</h2>
        <form onSubmit={submit} noValidate>
          <div className="grid-2">
            <Field
              label="Public IP"
              name="publicIp"
              value={publicIp}
              onChange={setPublicIp}
              error={update.error}
              hint="Where DNS records point."
            />
            <Field
              label="Root domain"
              name="rootDomain"
              value={rootDomain}
              onChange={setRootDomain}
              error={update.error}
              hint="Services get <name>.<root domain>."
            />
            <Field label="Mail sender" name="mailFrom" value={mailFrom} onChange={setMailFrom} error={update.error} />
            <Field
              label="SMTP URL"
              name="smtpUrl"
              type="password"
              value={smtpUrl}
              onChange={setSmtpUrl}
              error={update.error}
              hint={settings.smtpConfigured ? 'Set (write-only): type a new one to replace it.' : 'Not set: SMTP_URL applies.'}
              autoComplete="off"
            />
          </div>
          <label className="check">
            <input type="checkbox" checked={registrationOpen} onChange={(e) => setRegistrationOpen(e.target.checked)} /> Anyone may sign up
            (as a member)
          </label>
          <ErrorNotice error={formError(update.error, FIELDS) && update.error} />
          <button type="submit" className="primary" disabled={update.isPending}>
            Save settings
          </button>
          {update.isSuccess ? (
            <p className="alert ok" role="status">
              Saved.
            </p>
          ) : null}
        </form>
      </section>
      <section className="card" aria-labelledby="conn-h">
        <h2 id="conn-h">Connections</h2>
        <dl className="kv">
          <dt>DNS providers</dt>
          <dd>{settings.dnsProviders.map((d) => d.providerName).join(', ') || 'none'}</dd>
          <dt>AI providers</dt>
          <dd>{settings.aiProviders.map((a) => `${a.providerId} (${a.kind})`).join(', ') || 'none'}</dd>
          <dt>Object store</dt>
          <dd>{settings.objectStore ? `${settings.objectStore.bucket} at ${settings.objectStore.endpoint}` : 'none'}</dd>
        </dl>
        <p className="muted">
          Connect these through the API (<code>PUT /api/settings</code>): their secrets are write-only.
        </p>
      </section>
    </>
  );
}
