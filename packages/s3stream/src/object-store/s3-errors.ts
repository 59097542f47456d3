/**
 * What a failed S3 request means for its caller:
 * - `not-found`: the key (or, for HeadBucket, the bucket) does not exist;
 * - `invalid-range`: the range starts at or after the end of the object (416);
 * - `transient`: worth another attempt (5xx, throttling, timeouts, broken connections);
 * - `permanent`: another attempt would fail the same way (other 4xx such as 403 AccessDenied or 400).
 */
export type S3FailureKind = 'not-found' | 'invalid-range' | 'transient' | 'permanent';

/** The fields of SDK and Node errors that the classification reads; all optional, since anything can be thrown. */
interface ErrorFields {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  $retryable?: unknown;
}

/** Error names S3 and the SDK use for throttling and for timeouts; both are worth retrying. */
const TRANSIENT_ERROR_NAMES = new Set([
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'ThrottledException',
  'RequestThrottled',
  'RequestThrottledException',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'BandwidthLimitExceeded',
  'ServiceUnavailable',
  'InternalError',
  'RequestTimeout',
  'RequestTimeoutException',
  'TimeoutError',
]);

/** Node's codes for connections that failed to open or broke midway. */
const TRANSIENT_NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
]);

const NETWORK_CODE_IN_MESSAGE = new RegExp(`\\b(${[...TRANSIENT_NETWORK_CODES].join('|')})\\b`);

const NOT_FOUND_ERROR_NAMES = new Set(['NoSuchKey', 'NotFound']);

function fieldsOf(error: unknown): ErrorFields {
  return typeof error === 'object' && error !== null ? (error as ErrorFields) : {};
}

function httpStatusOf(fields: ErrorFields): number | undefined {
  const status = fields.$metadata?.httpStatusCode;
  return typeof status === 'number' ? status : undefined;
}

/** Sorts a failure of one S3 request into what the caller should do about it. */
export function classifyS3Error(error: unknown): S3FailureKind {
  const fields = fieldsOf(error);
  const name = typeof fields.name === 'string' ? fields.name : '';
  const code = typeof fields.code === 'string' ? fields.code : '';
  const message = typeof fields.message === 'string' ? fields.message : '';
  const status = httpStatusOf(fields);

  if (NOT_FOUND_ERROR_NAMES.has(name)) return 'not-found';
  // A missing bucket is a configuration error, not a missing object; calling it NotFound would mislead readers.
  if (name === 'NoSuchBucket') return 'permanent';
  if (name === 'InvalidRange' || status === 416) return 'invalid-range';
  if (TRANSIENT_ERROR_NAMES.has(name) || TRANSIENT_NETWORK_CODES.has(code)) return 'transient';
  // The SDK wraps errors thrown in another JavaScript realm (Node's own network errors seen from inside Jest's
  // sandbox) into a plain Error that keeps only their text, so the code is looked for in the message too.
  if (code === '' && NETWORK_CODE_IN_MESSAGE.test(message)) return 'transient';
  if (message.includes('socket hang up')) return 'transient';
  if (status !== undefined) {
    // 408 and 429 are the two client-side statuses that mean "try again later"; every other 4xx is the
    // request's own fault. A 404 without a known name (a HEAD has no body to name it) still means missing.
    if (status === 404) return 'not-found';
    if (status >= 500 || status === 408 || status === 429) return 'transient';
    if (status >= 400) return 'permanent';
  }
  if (fields.$retryable) return 'transient';
  // Anything else (a TypeError from a bug, an abort) would fail the same way again, and retrying it would
  // only hide it behind an Unavailable.
  return 'permanent';
}

/** A one-line account of a failure for error messages: status, S3 error name or Node code, and message. */
export function describeS3Error(error: unknown): string {
  const fields = fieldsOf(error);
  const parts: string[] = [];
  const status = httpStatusOf(fields);
  if (status !== undefined) parts.push(String(status));
  if (typeof fields.name === 'string' && fields.name !== 'Error') parts.push(fields.name);
  if (typeof fields.code === 'string' && fields.code !== fields.name) parts.push(fields.code);
  const message = typeof fields.message === 'string' && fields.message !== '' ? fields.message : undefined;
  const head = parts.join(' ');
  if (message === undefined) return head === '' ? String(error) : head;
  return head === '' ? message : `${head}: ${message}`;
}
