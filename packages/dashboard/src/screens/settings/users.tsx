import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId } from 'react';
import { Confirm, ErrorNotice, QueryState } from '../../components/ui';
import { formatDate } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';

/** Users and their roles; the owner changes roles and removes accounts, admins see the list. */
export default function Users() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const me = useQuery(trpc.user.me.queryOptions());
  const list = useQuery(trpc.users.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.users.list.queryKey() });
  const setRole = useMutation(trpc.users.setRole.mutationOptions({ onSettled: refresh }));
  const remove = useMutation(trpc.users.remove.mutationOptions({ onSettled: refresh }));
  const owner = me.data?.user.role === 'owner';
  const ids = useId();
  return (
    <div className="stack">
      <p className="muted">
        Owners manage everything; admins also manage settings and API keys; members use projects. New accounts sign up as members while the
        owner keeps registration open (Platform).
      </p>
      <ErrorNotice error={setRole.error ?? remove.error} />
      <QueryState query={list} label="users">
        {({ users }) => (
          <div className="table-wrap">
            <table>
              <caption className="visually-hidden">Users</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Email</th>
                  <th scope="col" id={`${ids}-role`}>
                    Role
                  </th>
                  <th scope="col">Two-factor</th>
                  <th scope="col">Joined</th>
                  {owner ? <th scope="col">Actions</th> : null}
                </tr>
              </thead>
              <tbody>
                {users.map((u) => (
                  <tr key={u.id}>
                    <td>{u.name}</td>
                    <td id={`${ids}-email-${u.id}`}>{u.email}</td>
                    <td>
                      {owner && u.role !== 'owner' ? (
                        <select
                          // Labelled by what is on screen: the column's header and the row's email ("Role ada@example.com").
                          aria-labelledby={`${ids}-role ${ids}-email-${u.id}`}
                          value={u.role}
                          onChange={(e) => setRole.mutate({ userId: u.id, role: e.target.value as 'admin' | 'member' })}
                        >
                          <option value="admin">admin</option>
                          <option value="member">member</option>
                        </select>
                      ) : (
                        u.role
                      )}
                    </td>
                    <td>{u.twoFactorEnabled ? 'on' : 'off'}</td>
                    <td>{formatDate(u.createdAt)}</td>
                    {owner ? (
                      <td>
                        {u.role !== 'owner' ? (
                          <Confirm
                            trigger={
                              <button type="button" aria-label={`Remove ${u.email}`}>
                                Remove
                              </button>
                            }
                            title={`Remove ${u.email}?`}
                            description={<p>The account, its sessions and its personal tokens are deleted.</p>}
                            action="Remove user"
                            onConfirm={() => remove.mutateAsync({ userId: u.id })}
                          />
                        ) : null}
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </QueryState>
    </div>
  );
}
