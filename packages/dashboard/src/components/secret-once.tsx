import { CopyButton } from './ui';

/** A credential the API shows once, at creation: read it out, offer a copy, say it will not be shown again. */
export function SecretOnce({ label, value, onDone }: { label: string; value: string; onDone: () => void }) {
  return (
    <div className="alert ok" role="status">
      <p>
        <strong>{label}</strong>: shown this once. Copy it now and keep it safe.
      </p>
      <p className="secret-once" data-testid="secret-once">
        {value}
      </p>
      <div className="row">
        <CopyButton value={value} />
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}
