/**
 * The service's replicas and resources as the form holds them (text, so a field can be empty) and as
 * the API takes them: an empty field is null (no limit, no reservation); anything else goes to the API
 * as a number, which validates it and names the field when it refuses it.
 */
export interface ScaleValues {
  replicas: number;
  resources: {
    cpuLimit: number | null;
    memoryLimitMb: number | null;
    cpuReservation: number | null;
    memoryReservationMb: number | null;
  };
}

export type ScaleForm = { replicas: string } & { [K in keyof ScaleValues['resources']]: string };

export const RESOURCE_KEYS = ['cpuLimit', 'memoryLimitMb', 'cpuReservation', 'memoryReservationMb'] as const;

export function scaleForm(values: ScaleValues): ScaleForm {
  const text = (n: number | null) => (n === null ? '' : String(n));
  return {
    replicas: String(values.replicas),
    cpuLimit: text(values.resources.cpuLimit),
    memoryLimitMb: text(values.resources.memoryLimitMb),
    cpuReservation: text(values.resources.cpuReservation),
    memoryReservationMb: text(values.resources.memoryReservationMb),
  };
}

export function scaleInput(form: ScaleForm): ScaleValues {
  const num = (s: string) => (s.trim() === '' ? null : Number(s.trim()));
  return {
    replicas: Number(form.replicas.trim()),
    resources: {
      cpuLimit: num(form.cpuLimit),
      memoryLimitMb: num(form.memoryLimitMb),
      cpuReservation: num(form.cpuReservation),
      memoryReservationMb: num(form.memoryReservationMb),
    },
  };
}
