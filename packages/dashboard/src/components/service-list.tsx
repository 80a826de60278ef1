import { memo, useRef } from 'react';
import { useFixedRows } from '../lib/fixed-rows';
import { Link } from 'react-router';
import type { RouterOutputs } from '../lib/trpc';
import { StatusBadge } from './ui';

export type ServiceRow = RouterOutputs['projects']['bySlug']['project']['services'][number];

const ROW_HEIGHT = 56;

/** What kind of service a row is, from the spec's repoFullName/repoUrl conventions. */
export function serviceKind(s: Pick<ServiceRow, 'repoFullName' | 'repoUrl'>): string {
  if (s.repoUrl === 'database' || s.repoFullName?.startsWith('database:')) return `database (${s.repoFullName?.slice(9) ?? ''})`;
  if (s.repoUrl === 'storage') return 'storage';
  if (s.repoUrl === 'container-image') return 'image';
  return 'git';
}

/**
 * The services of an environment, virtualized: only the rows in view are in the DOM, so a project of
 * 1,000 services scrolls like one of ten. A list with its items' positions announced (aria-setsize/posinset).
 */
export function ServiceList({ services }: { services: readonly ServiceRow[] }) {
  const parent = useRef<HTMLDivElement>(null);
  const rows = useFixedRows(parent, services.length, ROW_HEIGHT);
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: the scroll area must take keyboard scrolling
    <section ref={parent} className="vlist" tabIndex={0} aria-label={`Services (${services.length})`}>
      <ul aria-label="Services" style={{ height: rows.totalHeight, margin: 0, padding: 0, listStyle: 'none' }}>
        {services.slice(rows.start, rows.end).map((s, i) => (
          <Row key={s.id} service={s} index={rows.start + i} count={services.length} />
        ))}
      </ul>
    </section>
  );
}

/** A row, re-rendered only when its service's fields or its place change (the project is read again every few seconds). */
const Row = memo(
  function Row({ service: s, index, count }: { service: ServiceRow; index: number; count: number }) {
    return (
      <li className="vrow" aria-setsize={count} aria-posinset={index + 1} style={{ top: index * ROW_HEIGHT, height: ROW_HEIGHT }}>
        <span>
          <Link to={`/services/${s.id}`}>{s.name}</Link> <span className="muted">{serviceKind(s)}</span>
        </span>
        <StatusBadge status={s.status} label={`${s.name} status`} />
      </li>
    );
  },
  (a, b) =>
    a.index === b.index &&
    a.count === b.count &&
    a.service.id === b.service.id &&
    a.service.name === b.service.name &&
    a.service.status === b.service.status &&
    a.service.repoUrl === b.service.repoUrl &&
    a.service.repoFullName === b.service.repoFullName,
);
