import { useId, useRef, useState } from 'react';
import { applySuggestion, matchSuggestions, type OpenReference, openReference } from '../lib/env-suggest';

export interface Suggestion {
  key: string;
  label: string;
}

/**
 * A value input that offers `${slug.KEY}` references as the person types `${`: an ARIA combobox
 * (arrow keys move, Enter or Tab chooses, Escape closes), the list labelled with each key's origin.
 */
export function ReferenceInput(props: {
  id: string;
  value: string;
  onChange: (value: string) => void;
  suggestions: readonly Suggestion[];
  describedBy?: string;
  invalid?: boolean;
  type?: string;
}) {
  const listId = useId();
  const input = useRef<HTMLInputElement>(null);
  const [ref, setRef] = useState<OpenReference | null>(null);
  const [active, setActive] = useState(0);
  const matches = ref ? matchSuggestions(props.suggestions, ref.query, 30) : [];
  const open = matches.length > 0;

  const update = (value: string, cursor: number) => {
    props.onChange(value);
    setRef(openReference(value, cursor));
    setActive(0);
  };
  const choose = (key: string) => {
    const el = input.current;
    if (!el || !ref) return;
    const cursor = el.selectionStart ?? props.value.length;
    const next = applySuggestion(props.value, cursor, ref, key);
    props.onChange(next.value);
    setRef(null);
    requestAnimationFrame(() => {
      el.focus();
      el.setSelectionRange(next.cursor, next.cursor);
    });
  };
  return (
    <div>
      <input
        ref={input}
        id={props.id}
        type={props.type ?? 'text'}
        role="combobox"
        aria-autocomplete="list"
        aria-expanded={open}
        aria-controls={listId}
        aria-activedescendant={open ? `${listId}-${active}` : undefined}
        aria-describedby={props.describedBy}
        aria-invalid={props.invalid || undefined}
        autoComplete="off"
        spellCheck={false}
        value={props.value}
        onChange={(e) => update(e.target.value, e.target.selectionStart ?? e.target.value.length)}
        onBlur={() => setTimeout(() => setRef(null), 150)}
        onKeyDown={(e) => {
          if (!open) return;
          if (e.key === 'ArrowDown') {
            e.preventDefault();
            setActive((a) => (a + 1) % matches.length);
          } else if (e.key === 'ArrowUp') {
            e.preventDefault();
            setActive((a) => (a - 1 + matches.length) % matches.length);
          } else if (e.key === 'Enter' || e.key === 'Tab') {
            e.preventDefault();
            choose(matches[active]!.key);
          } else if (e.key === 'Escape') {
            e.preventDefault();
            setRef(null);
          }
        }}
        className="mono"
        style={{ width: '100%' }}
      />
      <div id={listId} role="listbox" aria-label="Variable references" className="suggestions" hidden={!open}>
        {matches.map((m, i) => (
          <div
            key={m.key}
            tabIndex={-1}
            id={`${listId}-${i}`}
            role="option"
            aria-selected={i === active}
            onMouseDown={(e) => {
              e.preventDefault();
              choose(m.key);
            }}
          >
            {`\${${m.key}}`} <span className="muted">{m.label}</span>
          </div>
        ))}
      </div>
    </div>
  );
}
