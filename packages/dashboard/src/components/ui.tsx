import * as AlertDialog from '@radix-ui/react-alert-dialog';
import * as Dialog from '@radix-ui/react-dialog';
import { type ReactNode, useId, useRef, useState } from 'react';
import { type ApiError, apiErrorOf, fieldError } from '../lib/api-error';

/** A labelled input with its hint and the API's error for this field, tied together for assistive technology. */
export function Field(props: {
  label: string;
  name: string;
  error?: unknown;
  hint?: ReactNode;
  children?: (ids: { id: string; describedBy: string | undefined; invalid: boolean }) => ReactNode;
  type?: string;
  value?: string;
  onChange?: (value: string) => void;
  required?: boolean;
  autoComplete?: string;
  placeholder?: string;
  inputMode?: 'numeric' | 'text' | 'email';
  autoFocus?: boolean;
}) {
  const id = useId();
  const message = fieldError(props.error, props.name);
  const hintId = props.hint ? `${id}-hint` : undefined;
  const errorId = message ? `${id}-error` : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(' ') || undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.children ? (
        props.children({ id, describedBy, invalid: !!message })
      ) : (
        <input
          id={id}
          name={props.name}
          type={props.type ?? 'text'}
          value={props.value ?? ''}
          onChange={(e) => props.onChange?.(e.target.value)}
          required={props.required}
          autoComplete={props.autoComplete}
          placeholder={props.placeholder}
          inputMode={props.inputMode}
          // biome-ignore lint/a11y/noAutofocus: the first field of a sign-in step
          autoFocus={props.autoFocus}
          aria-invalid={message ? true : undefined}
          aria-describedby={describedBy}
        />
      )}
      {props.hint ? (
        <span id={hintId} className="hint">
          {props.hint}
        </span>
      ) : null}
      {message ? (
        <span id={errorId} className="error">
          {message}
        </span>
      ) : null}
    </div>
  );
}

/** The API's `{error, message, details}` for a form or a screen, read out when it appears. */
export function ErrorNotice({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  const e: ApiError = apiErrorOf(error);
  const extra = Object.entries(e.details).filter(([k]) => k !== 'field');
  return (
    <div className="alert" role="alert">
      <strong>{title ?? 'Error'}: </strong>
      {e.message}{' '}
      <span className="muted">
        ({e.code}
        {e.status ? `, HTTP ${e.status}` : ''})
      </span>
      {extra.length > 0 ? (
        <div className="muted">
          {extra.map(([k, v]) => (
            <div key={k}>
              {k}: <code>{typeof v === 'string' ? v : JSON.stringify(v)}</code>
            </div>
          ))}
        </div>
      ) : null}
    </div>
  );
}

export function Loading({ label = 'Loading' }: { label?: string }) {
  return (
    <div className="state" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> {label}...
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="state">{children}</div>;
}

/** Loading, error and data: the three states every screen shows. */
export function QueryState<T>(props: {
  query: { isPending: boolean; error: unknown; data: T | undefined; refetch: () => unknown };
  label?: string;
  children: (data: T) => ReactNode;
}) {
  if (props.query.isPending) return <Loading label={props.label ? `Loading ${props.label}` : 'Loading'} />;
  if (props.query.error || props.query.data === undefined) {
    return (
      <div>
        <ErrorNotice error={props.query.error} title={props.label ? `Could not load ${props.label}` : 'Could not load'} />
        <button type="button" onClick={() => props.query.refetch()}>
          Try again
        </button>
      </div>
    );
  }
  return <>{props.children(props.query.data)}</>;
}

const TONE: Record<string, 'ok' | 'warn' | 'danger' | 'neutral'> = {
  active: 'ok',
  succeeded: 'ok',
  passed: 'ok',
  skipped: 'neutral',
  running: 'warn',
  queued: 'neutral',
  deploying: 'warn',
  idle: 'neutral',
  stopped: 'neutral',
  failed: 'danger',
  aborted: 'neutral',
  pending: 'neutral',
  // servers
  ready: 'ok',
  down: 'danger',
  unknown: 'neutral',
  drain: 'warn',
  pause: 'warn',
  // notification channels and deliveries
  ok: 'ok',
  failing: 'danger',
  sending: 'warn',
  success: 'ok',
  // webhook deliveries and previews
  deployed: 'ok',
  ignored: 'neutral',
  refused: 'danger',
  duplicate: 'neutral',
  limited: 'warn',
};

export function StatusBadge({ status, label }: { status: string; label?: string }) {
  return (
    <span className={`badge ${TONE[status] ?? 'neutral'}`} data-status={status}>
      {label ? <span className="visually-hidden">{label}: </span> : null}
      {status}
    </span>
  );
}

export function CopyButton({ value, label = 'Copy' }: { value: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(value);
          setCopied(true);
          setTimeout(() => setCopied(false), 2000);
        } catch {
          setCopied(false);
        }
      }}
    >
      {label}
      <span aria-live="polite">{copied ? ' (copied)' : ''}</span>
    </button>
  );
}

/** A modal dialog with a title (Radix: focus trapped and restored, Escape closes). */
export function Modal(props: {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  title: string;
  description?: string;
  children: ReactNode;
}) {
  // Opened by state, not by a Dialog.Trigger, so Radix has no trigger to give focus back to on close (it went to
  // the page's body, and a keyboard user started again from the top): the element focused when it opened gets it.
  // Read as the dialog opens, in render: a field of the dialog with autoFocus takes focus before Radix's own
  // open handler runs.
  const opener = useRef<HTMLElement | null>(null);
  const wasOpen = useRef(false);
  if (props.open && !wasOpen.current) opener.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  wasOpen.current = props.open;
  return (
    <Dialog.Root open={props.open} onOpenChange={props.onOpenChange}>
      <Dialog.Portal>
        <Dialog.Overlay className="dialog-overlay" />
        <Dialog.Content
          className="dialog"
          aria-describedby={props.description ? undefined : undefined}
          onCloseAutoFocus={(event) => {
            if (!opener.current?.isConnected) return;
            event.preventDefault();
            opener.current.focus();
          }}
        >
          <Dialog.Title>{props.title}</Dialog.Title>
          {props.description ? (
            <Dialog.Description className="muted">{props.description}</Dialog.Description>
          ) : (
            <Dialog.Description className="visually-hidden">{props.title}</Dialog.Description>
          )}
          {props.children}
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

/**
 * Asks before a destructive or disruptive action. With `typed`, the action stays disabled until the
 * person types that text (the name of what goes away).
 */
export function Confirm(props: {
  trigger: ReactNode;
  title: string;
  description: ReactNode;
  action: string;
  onConfirm: () => Promise<unknown> | unknown;
  typed?: string;
  danger?: boolean;
}) {
  const [open, setOpen] = useState(false);
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const id = useId();
  const ready = !props.typed || text === props.typed;
  return (
    <AlertDialog.Root
      open={open}
      onOpenChange={(next) => {
        setOpen(next);
        if (!next) {
          setText('');
          setError(null);
        }
      }}
    >
      <AlertDialog.Trigger asChild>{props.trigger}</AlertDialog.Trigger>
      <AlertDialog.Portal>
        <AlertDialog.Overlay className="dialog-overlay" />
        <AlertDialog.Content className="dialog">
          <AlertDialog.Title>{props.title}</AlertDialog.Title>
          <AlertDialog.Description asChild>
            <div>{props.description}</div>
          </AlertDialog.Description>
          {props.typed ? (
            <div className="field">
              <label htmlFor={id}>
                Type <code>{props.typed}</code> to confirm
              </label>
              <input id={id} value={text} onChange={(e) => setText(e.target.value)} autoComplete="off" />
            </div>
          ) : null}
          <ErrorNotice error={error} />
          <div className="row end">
            <AlertDialog.Cancel asChild>
              <button type="button">Cancel</button>
            </AlertDialog.Cancel>
            <button
              type="button"
              className={props.danger === false ? 'primary' : 'danger'}
              disabled={!ready || busy}
              onClick={async () => {
                setBusy(true);
                setError(null);
                try {
                  await props.onConfirm();
                  setOpen(false);
                  setText('');
                } catch (e) {
                  setError(e);
                } finally {
                  setBusy(false);
                }
              }}
            >
              {busy ? <span className="spinner" aria-hidden="true" /> : null}
              {props.action}
            </button>
          </div>
        </AlertDialog.Content>
      </AlertDialog.Portal>
    </AlertDialog.Root>
  );
}

export function PageTitle({ children, actions }: { children: ReactNode; actions?: ReactNode }) {
  return (
    <div className="spread">
      <h1>{children}</h1>
      {actions ? <div className="row">{actions}</div> : null}
    </div>
  );
}
