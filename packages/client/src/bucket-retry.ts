import type { ErrorCode } from '@mink/protocol';

/**
 * What a bucket request does after an error answer (docs/ownership.md §6): follow the redirect to the
 * leader it names; wait (its Retry-After, else backoff) and ask any node for the route again; ask for the
 * route once at once (a table or partition this client's route does not know yet); or fail with it.
 *
 * A bucket in hand-off (a SIGTERM'd or failed leader, a rebalance) answers for a moment with Fenced (its
 * stream is no longer this incarnation's: the write was refused, not stored), Unavailable (no leader yet,
 * opening, or the leader's process gone), NotLeader without a redirect (the node does not know the new
 * leader yet) or Timeout: each is retried until the new leader answers, within the caller's attempts.
 * Every other error is the request's own and fails at once.
 */
export type BucketRetry = 'redirect' | 'wait-and-refresh' | 'refresh-route' | 'fail';

export function bucketRetryOf(error: { code: ErrorCode; hasRedirect: boolean }, attempt: number): BucketRetry {
  switch (error.code) {
    case 'NotLeader':
      return error.hasRedirect ? 'redirect' : 'wait-and-refresh';
    case 'Fenced':
    case 'Unavailable':
    case 'Timeout':
      return 'wait-and-refresh';
    case 'NotFound':
      return attempt === 0 ? 'refresh-route' : 'fail';
    default:
      return 'fail';
  }
}
