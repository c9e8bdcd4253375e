/**
 * The closed list of error codes bubble answers with, and the HTTP status each maps to.
 * Adding a code is a contract change: document it in docs/api.md.
 */
export const ERROR_STATUS = {
  UB_ERR_BAD_REQUEST: 400,
  UB_ERR_BAD_ID: 400,
  UB_ERR_UNAUTHORIZED: 401,
  UB_ERR_FORBIDDEN: 403,
  UB_ERR_NOT_FOUND: 404,
  UB_ERR_METHOD_NOT_ALLOWED: 405,
  UB_ERR_FOLLOW_CAP: 409,
  UB_ERR_TOO_LARGE: 413,
  UB_ERR_SELF_FOLLOW: 422,
  UB_ERR_FUTURE_TS: 422,
  UB_ERR_RATE_LIMITED: 429,
  UB_ERR_INTERNAL: 500,
  UB_ERR_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

/** Codes a caller may retry as they are, after a pause. */
const TEMPORARY: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'UB_ERR_RATE_LIMITED',
  'UB_ERR_UNAVAILABLE',
  'UB_ERR_INTERNAL',
]);

export class BubbleError extends Error {
  override readonly name = 'BubbleError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly temporary: boolean;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.temporary = TEMPORARY.has(code);
  }

  toJSON(): { error: { code: ErrorCode; message: string } } {
    return { error: { code: this.code, message: this.message } };
  }
}
