/**
 * The API's error body, `{error, message, details}`, from whatever a call threw: the typed client's
 * TRPCClientError carries it in `data` (routers/trpc.ts's errorFormatter), REST answers in the body.
 */
export interface ApiError {
  /** `validation_error`, `not_found`, ...; `network_error` when no answer came. */
  code: string;
  message: string;
  details: Record<string, unknown>;
  /** HTTP status, 0 without an answer. */
  status: number;
  /** The input field the error names (details.field), when it names one. */
  field: string | undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

export function apiErrorOf(error: unknown): ApiError {
  if (isRecord(error)) {
    const data = isRecord(error.data) ? error.data : isRecord(error.shape) && isRecord(error.shape.data) ? error.shape.data : null;
    const body = data && typeof data.error === 'string' ? data : typeof error.error === 'string' ? error : null;
    if (body) {
      const details = isRecord(body.details) ? body.details : {};
      return {
        code: String(body.error),
        message: typeof body.message === 'string' ? body.message : typeof error.message === 'string' ? error.message : 'Request failed',
        details,
        status: typeof body.httpStatus === 'number' ? body.httpStatus : typeof error.status === 'number' ? error.status : 0,
        field: typeof details.field === 'string' ? details.field : undefined,
      };
    }
    const message = typeof error.message === 'string' ? error.message : 'Request failed';
    const network = error instanceof TypeError || /fetch|network|Failed to/i.test(message);
    return {
      code: network ? 'network_error' : 'unknown_error',
      message: network ? 'The platform did not answer. Check your connection and try again.' : message,
      details: {},
      status: 0,
      field: undefined,
    };
  }
  return { code: 'unknown_error', message: String(error), details: {}, status: 0, field: undefined };
}

/**
 * The error to show beside one field: the API names fields by their input path (`name`, `env.0.key`,
 * `sourceUrl`); a field matches itself and its sub-paths.
 */
export function fieldError(error: unknown, field: string): string | undefined {
  if (!error) return undefined;
  const e = apiErrorOf(error);
  if (!e.field) return undefined;
  return e.field === field || e.field.startsWith(`${field}.`) ? e.message : undefined;
}

/** The error to show for the form as a whole: one that names none of its fields. */
export function formError(error: unknown, fields: readonly string[]): ApiError | undefined {
  if (!error) return undefined;
  const e = apiErrorOf(error);
  if (e.field && fields.some((f) => e.field === f || e.field?.startsWith(`${f}.`))) return undefined;
  return e;
}
