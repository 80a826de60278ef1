import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { Confirm, Empty, ErrorNotice, PageTitle, QueryState, StatusBadge } from '../../components/ui';
import { useTRPC } from '../../lib/trpc';

/** S3-compatible storage instances: where to reach each bucket, start, stop and delete. */
export default function StorageList() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery({ ...trpc.storage.list.queryOptions(), refetchInterval: 10_000 });
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.storage.list.queryKey() });
  const start = useMutation(trpc.storage.start.mutationOptions({ onSettled: refresh }));
  const stop = useMutation(trpc.storage.stop.mutationOptions({ onSettled: refresh }));
  const remove = useMutation(trpc.storage.delete.mutationOptions({ onSettled: refresh }));
  return (
    <>
      <PageTitle>Storage</PageTitle>
      <p className="muted">
        Create a storage instance from a project: Create service, then Storage. Its secret key is shown once, when it is made.
      </p>
      <ErrorNotice error={start.error ?? stop.error ?? remove.error} />
      <QueryState query={list} label="storage instances">
        {({ storage }) =>
          storage.length === 0 ? (
            <Empty>No storage instances yet.</Empty>
          ) : (
            <div className="stack">
              {storage.map((s) => (
                <section key={s.id} className="card" aria-labelledby={`st-${s.id}`}>
                  <div className="spread">
                    <h2 id={`st-${s.id}`}>
                      <Link to={`/services/${s.id}`}>{s.name}</Link>
                    </h2>
                    <StatusBadge status={s.status} label="Storage status" />
                  </div>
                  <dl className="kv">
                    <dt>Bucket</dt>
                    <dd className="mono">{s.s3.bucket}</dd>
                    <dt>Endpoint (inside the project)</dt>
                    <dd className="mono">{s.s3.endpoint}</dd>
                    <dt>Public endpoint</dt>
                    <dd className="mono">{s.s3.publicEndpoint ?? 'private'}</dd>
                    <dt>Region</dt>
                    <dd className="mono">{s.s3.region}</dd>
                    <dt>Access key</dt>
                    <dd className="mono">{s.s3.accessKeyId}</dd>
                  </dl>
                  <div className="row">
                    {s.status === 'stopped' ? (
                      <button type="button" onClick={() => start.mutate({ storageId: s.id })}>
                        Start
                      </button>
                    ) : (
                      <button type="button" onClick={() => stop.mutate({ storageId: s.id })}>
                        Stop
                      </button>
                    )}
                    <Confirm
                      trigger={<button type="button">Delete storage</button>}
                      title={`Delete ${s.name}?`}
                      description={<p>Every object in its bucket goes with it.</p>}
                      typed={s.name}
                      action="Delete storage"
                      onConfirm={() => remove.mutateAsync({ storageId: s.id })}
                    />
                  </div>
                </section>
              ))}
            </div>
          )
        }
      </QueryState>
    </>
  );
}
