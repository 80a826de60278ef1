import { useQuery } from '@tanstack/react-query';
import { QueryState } from '../../components/ui';
import { useTRPC } from '../../lib/trpc';

/** TLS of a PostgreSQL-compatible database: whether it is on, where to connect, and its CA to verify the server. */
export function TlsInfo({ serviceId }: { serviceId: string }) {
  const trpc = useTRPC();
  const tls = useQuery(trpc.databaseTls.info.queryOptions({ serviceId }));
  return (
    <QueryState query={tls} label="TLS information">
      {({ tls: t }) => (
        <div className="card">
          <dl className="kv">
            <dt>TLS</dt>
            <dd>{t.active ? 'on' : 'off'}</dd>
            <dt>Public hostname</dt>
            <dd className="mono">{t.publicHostname || '-'}</dd>
            <dt>Public port</dt>
            <dd>{t.publicPort || '-'}</dd>
          </dl>
          {t.caCertAvailable ? (
            <p>
              <a className="button" href={`/api/services/${serviceId}/database/tls/ca`} download>
                Download CA certificate
              </a>{' '}
              <span className="muted">Use it with sslmode=verify-full.</span>
            </p>
          ) : (
            <p className="muted">No CA certificate yet.</p>
          )}
        </div>
      )}
    </QueryState>
  );
}
