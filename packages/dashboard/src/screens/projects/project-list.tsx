import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { Empty, ErrorNotice, Field, Modal, PageTitle, QueryState, StatusBadge } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { timeAgo } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';

export default function ProjectList() {
  const trpc = useTRPC();
  const projects = useQuery({ ...trpc.projects.list.queryOptions(), refetchInterval: 10_000 });
  const [creating, setCreating] = useState(false);
  return (
    <>
      <PageTitle
        actions={
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            Create project
          </button>
        }
      >
        Projects
      </PageTitle>
      <QueryState query={projects} label="projects">
        {({ projects: list }) =>
          list.length === 0 ? (
            <Empty>
              No projects yet. A project groups the services, databases and storage of one application.{' '}
              <button type="button" className="link" onClick={() => setCreating(true)}>
                Create your first project
              </button>
            </Empty>
          ) : (
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Projects</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Status</th>
                    <th scope="col">Services</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((p) => (
                    <tr key={p.id}>
                      <td>
                        <Link to={`/projects/${p.slug}`}>{p.name}</Link>
                        {p.description ? <div className="muted">{p.description}</div> : null}
                      </td>
                      <td>
                        <StatusBadge status={p.status} />
                      </td>
                      <td className="num">{p.serviceCount}</td>
                      <td>{timeAgo(p.lastUpdatedAt)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </QueryState>
      <CreateProject open={creating} onOpenChange={setCreating} />
    </>
  );
}

function CreateProject({ open, onOpenChange }: { open: boolean; onOpenChange: (open: boolean) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const create = useMutation(
    trpc.projects.create.mutationOptions({
      onSuccess: async ({ project }) => {
        await queryClient.invalidateQueries({ queryKey: trpc.projects.list.queryKey() });
        onOpenChange(false);
        setName('');
        setDescription('');
        navigate(`/projects/${project.slug}`);
      },
    }),
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({ name: name.trim(), description: description.trim() || undefined });
  };
  return (
    <Modal open={open} onOpenChange={onOpenChange} title="Create project">
      <form onSubmit={submit} noValidate>
        <Field label="Name" name="name" value={name} onChange={setName} error={create.error} required autoFocus />
        <Field label="Description" name="description" value={description} onChange={setDescription} error={create.error} hint="Optional." />
        <ErrorNotice error={formError(create.error, ['name', 'description']) && create.error} />
        <div className="row end">
          <button type="button" onClick={() => onOpenChange(false)}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={create.isPending}>
            Create project
          </button>
        </div>
      </form>
    </Modal>
  );
}
