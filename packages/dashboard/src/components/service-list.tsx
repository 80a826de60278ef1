import { useVirtualizer } from '@tanstack/react-virtual';
import { useRef } from 'react';
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
  const virtualizer = useVirtualizer({
    count: services.length,
    getScrollElement: () => parent.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 8,
  });
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: the scroll area must take keyboard scrolling
    <section ref={parent} className="vlist" tabIndex={0} aria-label={`Services (${services.length})`}>
      <ul aria-label="Services" style={{ height: virtualizer.getTotalSize(), margin: 0, padding: 0, listStyle: 'none' }}>
        {virtualizer.getVirtualItems().map((item) => {
          const s = services[item.index]!;
          return (
            <li
              key={s.id}
              className="vrow"
              aria-setsize={services.length}
              aria-posinset={item.index + 1}
              style={{ top: item.start, height: ROW_HEIGHT }}
            >
              <span>
                <Link to={`/services/${s.id}`}>{s.name}</Link> <span className="muted">{serviceKind(s)}</span>
              </span>
              <StatusBadge status={s.status} label={`${s.name} status`} />
            </li>
          );
        })}
      </ul>
    </section>
  );
}
