import { classifyS3Error, describeS3Error } from './s3-errors';

/** An error shaped like the SDK's: a name, an HTTP status in $metadata, and optional Node code. */
function sdkError(name: string, status: number | undefined, message = 'message', code?: string): Error {
  const error = new Error(message);
  error.name = name;
  return Object.assign(error, { $metadata: { httpStatusCode: status }, ...(code === undefined ? {} : { code }) });
}

describe('classifyS3Error', () => {
  it.each([
    ['NoSuchKey 404', sdkError('NoSuchKey', 404), 'not-found'],
    ['HEAD 404 without a body', sdkError('NotFound', 404), 'not-found'],
    ['unnamed 404', sdkError('Unknown', 404), 'not-found'],
    ['NoSuchBucket 404', sdkError('NoSuchBucket', 404), 'permanent'],
    ['InvalidRange 416', sdkError('InvalidRange', 416), 'invalid-range'],
    ['SlowDown 503', sdkError('SlowDown', 503), 'transient'],
    ['unnamed 503', sdkError('Unknown', 503), 'transient'],
    ['InternalError 500', sdkError('InternalError', 500), 'transient'],
    ['throttling 429', sdkError('TooManyRequestsException', 429), 'transient'],
    ['S3 RequestTimeout 400', sdkError('RequestTimeout', 400), 'transient'],
    ['SDK TimeoutError without status', sdkError('TimeoutError', undefined), 'transient'],
    ['AccessDenied 403', sdkError('AccessDenied', 403), 'permanent'],
    ['InvalidRequest 400', sdkError('InvalidRequest', 400), 'permanent'],
    ['ECONNREFUSED', sdkError('Error', undefined, 'connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'), 'transient'],
    ['ECONNRESET', sdkError('Error', undefined, 'read ECONNRESET', 'ECONNRESET'), 'transient'],
    ['socket hang up', new Error('socket hang up'), 'transient'],
    ['network error wrapped across realms', new Error('AWS SDK error wrapper for Error: connect ECONNREFUSED 127.0.0.1:9'), 'transient'],
    ['SDK-marked retryable', Object.assign(new Error('x'), { $retryable: { throttling: true } }), 'transient'],
    ['a TypeError from a bug', new TypeError('cannot read properties of undefined'), 'permanent'],
    ['a thrown string', 'oops', 'permanent'],
  ])('%s is %s', (_label, error, expected) => {
    // Proves each kind of failure gets the treatment the adapter's contract promises (retry, NotFound, InvalidArgument or refusal).
    expect(classifyS3Error(error)).toBe(expected);
  });
});

describe('describeS3Error', () => {
  it.each([
    [sdkError('SlowDown', 503, 'Please reduce your request rate.'), '503 SlowDown: Please reduce your request rate.'],
    [sdkError('Error', undefined, 'connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'), 'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1'],
    [Object.assign(new Error(''), { code: 'ECONNREFUSED' }), 'ECONNREFUSED'],
    ['oops', 'oops'],
  ])('describes %p as %p', (error, expected) => {
    // Proves messages carry the status, S3 code and cause text an operator needs, and survive errors with empty messages.
    expect(describeS3Error(error)).toBe(expected);
  });
});
