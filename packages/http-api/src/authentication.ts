import { MinkError, bearerTokenOf, type AccessPolicy } from '@mink/protocol';

/**
 * The Unauthenticated error refusing a caller whose `authorization` header carries no bearer token `policy`
 * issued (none, one of another shape, or an unknown one), or null when it carries one, whatever that token
 * allows: what the gateway checks on a request's headers alone, before it reads any of its body (HTTP) or
 * messages (gRPC). Scopes and tables are checked later, by `authorize`, once the operation and its table are
 * known.
 */
export function unauthenticatedErrorOf(policy: AccessPolicy, authorization: string | undefined): MinkError | null {
  try {
    bearerTokenOf(policy, authorization);
    return null;
  } catch (error) {
    if (error instanceof MinkError) return error;
    throw error;
  }
}
