import { useId } from 'react';
import { ErrorNotice } from './ui';

interface ProjectsQuery {
  data?: { projects: Array<{ id: string; name: string }> };
  error: unknown;
}

/** A "Project" field over the projects list the screen already reads, with a first choice for none in particular. */
export function ProjectSelect({
  projects,
  value,
  onChange,
  anyLabel,
}: {
  projects: ProjectsQuery;
  value: string;
  onChange: (projectId: string) => void;
  /** The empty value's label, e.g. "All projects". */
  anyLabel: string;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>Project</label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">{anyLabel}</option>
        {(projects.data?.projects ?? []).map((p) => (
          <option key={p.id} value={p.id}>
            {p.name}
          </option>
        ))}
      </select>
      {projects.error ? <ErrorNotice error={projects.error} title="Could not load projects" /> : null}
    </div>
  );
}
