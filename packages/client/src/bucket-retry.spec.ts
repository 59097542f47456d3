import type { ErrorCode } from '@mink/protocol';
import { bucketRetryOf, type BucketRetry } from './bucket-retry';

describe('bucketRetryOf', () => {
  it.each<[ErrorCode, boolean, number, BucketRetry]>([
    ['NotLeader', true, 0, 'redirect'],
    ['NotLeader', true, 7, 'redirect'],
    // A bucket in hand-off: the node answering does not know the new leader yet, or its stream was taken.
    ['NotLeader', false, 0, 'wait-and-refresh'],
    ['Fenced', false, 0, 'wait-and-refresh'],
    ['Unavailable', false, 3, 'wait-and-refresh'],
    ['Timeout', false, 1, 'wait-and-refresh'],
    // A table or partition the route does not know yet is asked for once.
    ['NotFound', false, 0, 'refresh-route'],
    ['NotFound', false, 1, 'fail'],
    // The request's own errors are never retried.
    ['InvalidArgument', false, 0, 'fail'],
    ['Conflict', false, 0, 'fail'],
    ['Unauthenticated', false, 0, 'fail'],
    ['PermissionDenied', false, 0, 'fail'],
    ['Internal', false, 0, 'fail'],
  ])('%s (redirect: %p) at attempt %p: %s', (code, hasRedirect, attempt, retry) => {
    expect(bucketRetryOf({ code, hasRedirect }, attempt)).toBe(retry);
  });
});
