/**
 * The one application error type: a condition a caller handles, carrying its HTTP status
 * and an upper-case code. Anything else that is thrown is unexpected and becomes a 500.
 */
export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  /** Extra public detail (for example the fields that failed validation). */
  readonly details: Readonly<Record<string, unknown>> | undefined;
  /**
   * The reason as data (`{ code, ...params }`) for in-process callers that word it themselves
   * (the command line, in its language); not part of the API's error object.
   */
  readonly problem: Readonly<{ code: string }> | undefined;

  constructor(
    status: number,
    code: string,
    message: string,
    options: {
      cause?: unknown;
      details?: Record<string, unknown>;
      problem?: Readonly<{ code: string }>;
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "AppError";
    this.status = status;
    this.code = code;
    this.details = options.details;
    this.problem = options.problem;
  }
}

/** Shorthand for a 400 naming the offending field. */
export function badRequest(message: string, field?: string): AppError {
  return new AppError(400, "BAD_REQUEST", message, field ? { details: { field } } : {});
}
