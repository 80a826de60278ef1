import { memo, useEffect, useId, useMemo, useRef, useState } from 'react';
import { useFixedRows } from '../lib/fixed-rows';
import { findMatches, splitMatches, stepMatch } from '../lib/log-search';

export interface LogLine {
  id: number;
  line: string;
  stream: string;
}

const ROW = 20;

/**
 * A log of any length: only the lines in view are in the DOM (a 100,000-line build log scrolls and
 * searches without stalling the page). Follows new lines while scrolled to the end; search highlights
 * every match and steps through them.
 */
export function LogView(props: { lines: readonly LogLine[]; version: number; label: string; live?: boolean }) {
  const parent = useRef<HTMLDivElement>(null);
  const [query, setQuery] = useState('');
  const [current, setCurrent] = useState(-1);
  const [follow, setFollow] = useState(true);
  const searchId = useId();
  // biome-ignore lint/correctness/useExhaustiveDependencies: lines is appended in place; version says when
  const matches = useMemo(() => findMatches(props.lines, query), [props.version, query]);
  const rows = useFixedRows(parent, props.lines.length, ROW);

  // Follows the end as lines arrive: one scroll of the container.
  // biome-ignore lint/correctness/useExhaustiveDependencies: on new lines and when following is turned on
  useEffect(() => {
    const el = parent.current;
    if (follow && el && props.lines.length > 0) el.scrollTop = el.scrollHeight;
  }, [props.version, follow]);

  const go = (direction: 1 | -1) => {
    const next = stepMatch(matches.length, current, direction);
    setCurrent(next);
    if (next >= 0) {
      setFollow(false);
      rows.scrollToIndex(matches[next]!);
    }
  };
  const currentLine = current >= 0 ? matches[current] : undefined;

  return (
    <div>
      <div className="log-toolbar">
        <div className="field">
          <label htmlFor={searchId}>Search log</label>
          <input
            id={searchId}
            type="search"
            value={query}
            onChange={(e) => {
              setQuery(e.target.value);
              setCurrent(-1);
            }}
            onKeyDown={(e) => {
              if (e.key === 'Enter') {
                e.preventDefault();
                go(e.shiftKey ? -1 : 1);
              }
            }}
          />
        </div>
        <button type="button" onClick={() => go(-1)} disabled={matches.length === 0}>
          Previous match
        </button>
        <button type="button" onClick={() => go(1)} disabled={matches.length === 0}>
          Next match
        </button>
        <span role="status" aria-live="polite" className="muted">
          {query ? `${current >= 0 ? `${current + 1} of ` : ''}${matches.length} matching lines` : `${props.lines.length} lines`}
        </span>
        <label className="check">
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> Follow
        </label>
      </div>

      <div
        ref={parent}
        className="log-view"
        // biome-ignore lint/a11y/noNoninteractiveTabindex: the log scrolls with the keyboard
        tabIndex={0}
        role="log"
        aria-label={props.label}
        aria-live="off"
        onWheel={(e) => {
          if (e.deltaY < 0) setFollow(false);
        }}
      >
        <div style={{ height: rows.totalHeight, position: 'relative', minWidth: 'max-content' }}>
          {props.lines.slice(rows.start, rows.end).map((l, i) => (
            <Line key={l.id} index={rows.start + i} line={l} query={query} current={rows.start + i === currentLine} />
          ))}
        </div>
      </div>
      {props.live ? (
        <p className="muted">
          <span className="spinner" aria-hidden="true" /> Streaming live
        </p>
      ) : null}
    </div>
  );
}

/** One line of the log, re-rendered only when it, the search or the current match changes. */
const Line = memo(function Line({ index, line, query, current }: { index: number; line: LogLine; query: string; current: boolean }) {
  return (
    <div
      className={`log-line${line.stream === 'stderr' ? ' stderr' : ''}${current ? ' current' : ''}`}
      style={{ top: index * ROW }}
      data-line={index + 1}
    >
      {query
        ? splitMatches(line.line, query).map((part, i) =>
            // biome-ignore lint/suspicious/noArrayIndexKey: parts of one line, in order
            part.match ? <mark key={i}>{part.text}</mark> : <span key={i}>{part.text}</span>,
          )
        : line.line}
    </div>
  );
});

/**
 * Lines appended from a stream, re-rendered at most once per frame however fast they arrive. Ids only
 * grow: a line at or below the last id held is one already shown (a stream resumed after a dropped
 * connection sends its snapshot of what came after the last id it delivered, or a page overlaps it).
 */
export function useLineBuffer() {
  const lines = useRef<LogLine[]>([]);
  const [version, setVersion] = useState(0);
  const scheduled = useRef(false);
  const bump = () => {
    if (scheduled.current) return;
    scheduled.current = true;
    requestAnimationFrame(() => {
      scheduled.current = false;
      setVersion((v) => v + 1);
    });
  };
  return {
    lines: lines.current,
    version,
    reset(next: LogLine[]) {
      lines.current.length = 0;
      for (const l of next) lines.current.push(l);
      bump();
    },
    append(next: readonly LogLine[]) {
      const held = lines.current;
      let last = held.length > 0 ? held[held.length - 1]!.id : Number.NEGATIVE_INFINITY;
      for (const l of next) {
        if (l.id <= last) continue;
        held.push(l);
        last = l.id;
      }
      bump();
    },
  };
}
