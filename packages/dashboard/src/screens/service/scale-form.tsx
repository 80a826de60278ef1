import { type FormEvent, useState } from 'react';
import { ErrorNotice, Field } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { type ScaleValues, scaleForm, scaleInput } from '../../lib/scale';

const FIELDS = ['replicas', 'resources'];

/** Replicas and each replica's CPU and memory limits and reservations; the API's refusal beside the field it names. */
export function ScaleForm(props: {
  initial: ScaleValues;
  error: unknown;
  pending: boolean;
  saved: boolean;
  onSave: (values: ScaleValues) => void;
}) {
  const [form, setForm] = useState(() => scaleForm(props.initial));
  const set = (k: keyof typeof form) => (v: string) => setForm((f) => ({ ...f, [k]: v }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    props.onSave(scaleInput(form));
  };
  return (
    <form onSubmit={submit} noValidate>
      <div className="grid-2">
        <Field
          label="Replicas"
          name="replicas"
          value={form.replicas}
          onChange={set('replicas')}
          error={props.error}
          inputMode="numeric"
          hint="0 stops the service and keeps it"
        />
        <Field
          label="CPU limit (CPUs)"
          name="resources.cpuLimit"
          value={form.cpuLimit}
          onChange={set('cpuLimit')}
          error={props.error}
          hint="Empty: no limit"
        />
        <Field
          label="Memory limit (MB)"
          name="resources.memoryLimitMb"
          value={form.memoryLimitMb}
          onChange={set('memoryLimitMb')}
          error={props.error}
          inputMode="numeric"
          hint="Empty: no limit"
        />
        <Field
          label="CPU reservation (CPUs)"
          name="resources.cpuReservation"
          value={form.cpuReservation}
          onChange={set('cpuReservation')}
          error={props.error}
          hint="Empty: none"
        />
        <Field
          label="Memory reservation (MB)"
          name="resources.memoryReservationMb"
          value={form.memoryReservationMb}
          onChange={set('memoryReservationMb')}
          error={props.error}
          inputMode="numeric"
          hint="Empty: none"
        />
      </div>
      <ErrorNotice error={formError(props.error, FIELDS) && props.error} />
      <button type="submit" className="primary" disabled={props.pending}>
        Save scale
      </button>
      {props.saved ? (
        <p role="status" className="alert ok">
          Saved. Deploy to apply.
        </p>
      ) : null}
    </form>
  );
}
