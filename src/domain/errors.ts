/**
 * Typed domain errors. Services throw these; the edge (routers/trpc.ts) maps them
 * once to tRPC codes and the REST `{error, message, details}` body.
 */
export const ERROR_CODES = [
  'validation_error',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
  'rate_limited',
  'payload_too_large',
  'unsupported_media_type',
  'upstream_error',
  'query_error',
  'not_running',
  'image_gone',
  'method_not_allowed',
  'checksum_mismatch',
  'not_supported',
  'outside_window',
  'internal_error',
  'invalid_credentials',
  'registration_closed',
  'insufficient_scope',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export abstract class DomainError extends Error {
  abstract readonly code: ErrorCode;
  readonly details: Record<string, unknown>;
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = new.target.name;
    this.details = details;
  }
}

export class ValidationError extends DomainError {
  readonly code = 'validation_error' as const;
  constructor(field: string, message: string, details: Record<string, unknown> = {}) {
    super(message, { field, ...details });
  }
}

export class UnauthorizedError extends DomainError {
  readonly code = 'unauthorized' as const;
}

export class ForbiddenError extends DomainError {
  readonly code = 'forbidden' as const;
}

export class NotFoundError extends DomainError {
  readonly code = 'not_found' as const;
  constructor(resource: string, id: string) {
    super(`${resource} ${JSON.stringify(id)} was not found`, { resource, id });
  }
}

/** A request body in a media type the API does not read (only JSON is). */
export class UnsupportedMediaTypeError extends DomainError {
  readonly code = 'unsupported_media_type' as const;
}

export class ConflictError extends DomainError {
  readonly code = 'conflict' as const;
}

export class RateLimitedError extends DomainError {
  readonly code = 'rate_limited' as const;
  constructor(message: string, retryAfterSeconds: number) {
    super(message, { retryAfterSeconds });
  }
}

/** A third-party API (a DNS provider) failed or refused: its message, for the user to act on. */
export class UpstreamError extends DomainError {
  readonly code = 'upstream_error' as const;
}

/** A user's database refused a statement or a value: the engine's own message, for the user to act on. */
export class QueryError extends DomainError {
  readonly code = 'query_error' as const;
}

/** A rollback's image was collected (beyond ROLLBACK_KEEP) or removed by hand: deploy again instead. */
export class ImageGoneError extends DomainError {
  readonly code = 'image_gone' as const;
}

/** The database service has no running container (never deployed, stopped, or just deleted). */
export class NotRunningError extends DomainError {
  readonly code = 'not_running' as const;
}

/** Sign-in failed: the same error, message and timing for an unknown email and a wrong password. */
export class InvalidCredentialsError extends DomainError {
  readonly code = 'invalid_credentials' as const;
  constructor(message = 'Invalid email or password') {
    super(message);
  }
}

/** Signup while the owner has not opened registration. */
export class RegistrationClosedError extends DomainError {
  readonly code = 'registration_closed' as const;
  constructor() {
    super('Registration is closed on this installation; ask its owner to open it or to invite you');
  }
}

/** A personal token without the scope an operation needs: `details.scope` names it. */
export class InsufficientScopeError extends DomainError {
  readonly code = 'insufficient_scope' as const;
  constructor(scope: string) {
    super(`This token lacks the ${scope} scope`, { scope, requiredScope: scope });
  }
}

/** A path that exists answered a method it does not serve (the MCP endpoint's GET, which a client probes). */
export class MethodNotAllowedError extends DomainError {
  readonly code = 'method_not_allowed' as const;
}

/** A stored backup whose bytes no longer match the checksum taken when it was made (changed or truncated). */
export class ChecksumMismatchError extends DomainError {
  readonly code = 'checksum_mismatch' as const;
}

/** A point-in-time restore to a second the archive cannot reach (in the future, or before the window); details give the window. */
export class OutsideWindowError extends DomainError {
  readonly code = 'outside_window' as const;
}

/** The platform cannot do this for this kind of resource (a backup of an engine whose image has no dump tool). */
export class NotSupportedError extends DomainError {
  readonly code = 'not_supported' as const;
}
