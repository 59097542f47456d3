import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ENV, type Secret } from '@mink/config';
import { CLUSTER_AUTHORIZATION_SCHEME, INTERNAL_ROUTES_PREFIX, UnauthenticatedError } from '@mink/protocol';
import { refuseUnread } from './unread-body';

/** The secrets a service's HTTP routes may ask for (`ServiceConfig` has both); null: that route is open. */
export interface RouteSecrets {
  /** Asked for on every internal route (`/internal/…`): `Authorization: Cluster <secret>`. */
  clusterSecret: Secret | null;
  /** Asked for on `/metrics`: `Authorization: Bearer <token>`. */
  metricsToken: Secret | null;
}

/**
 * Routes that ask for one secret: those whose route pattern (Fastify's `routeOptions.url`, so a path that
 * matches no route is never taken for one that does) `covers`, by `Authorization: <scheme> <secret>`. The
 * secret is kept as its SHA-256 digest only.
 */
export interface GuardedRoutes {
  covers(route: string): boolean;
  scheme: string;
  digest: Buffer;
  /** What the secret is and where it comes from, for the 401's message (never the secret). */
  names: string;
}

/** What an `Authorization` header is worth against one secret. */
export type CredentialCheck = 'accepted' | 'missing' | 'malformed' | 'wrong';

/**
 * Checks `authorization` against the secret of SHA-256 `digest` under `scheme` (matched without regard to
 * case, as RFC 9110 says of schemes): `<scheme> <secret>` with one or more spaces between, none inside the
 * secret. The digests are compared in constant time, so the time taken tells nothing of how much of a wrong
 * secret was right; hashing first makes both sides one length whatever was sent.
 */
export function checkCredential(authorization: string | undefined, scheme: string, digest: Buffer): CredentialCheck {
  if (authorization === undefined || authorization === '') return 'missing';
  const match = /^(\S+) +(\S+) *$/.exec(authorization);
  if (match === null || match[1]!.toLowerCase() !== scheme.toLowerCase()) return 'malformed';
  return timingSafeEqual(digestOf(match[2]!), digest) ? 'accepted' : 'wrong';
}

/** The routes `secrets` guard: the internal routes by the cluster secret, `/metrics` by the metrics token. */
export function guardedRoutesOf(secrets: RouteSecrets): GuardedRoutes[] {
  const guarded: GuardedRoutes[] = [];
  if (secrets.clusterSecret) {
    guarded.push({
      covers: (route) => route.startsWith(INTERNAL_ROUTES_PREFIX),
      scheme: CLUSTER_AUTHORIZATION_SCHEME,
      digest: digestOf(secrets.clusterSecret.reveal()),
      names: `the cluster secret (${ENV.clusterSecretFile})`,
    });
  }
  if (secrets.metricsToken) {
    guarded.push({ covers: (route) => route === '/metrics', scheme: 'Bearer', digest: digestOf(secrets.metricsToken.reveal()), names: `the metrics token (${ENV.metricsTokenFile})` });
  }
  return guarded;
}

/**
 * Why a request to the route of pattern `route` (undefined: it matches none) with header `authorization`
 * is refused, or null when it may go on: a route no guard covers is open; a covered one needs its secret.
 */
export function refusalOf(guarded: readonly GuardedRoutes[], route: string | undefined, authorization: string | undefined): { scheme: string; error: UnauthenticatedError } | null {
  if (route === undefined) return null;
  const guard = guarded.find((candidate) => candidate.covers(route));
  if (guard === undefined) return null;
  const check = checkCredential(authorization, guard.scheme, guard.digest);
  switch (check) {
    case 'accepted':
      return null;
    case 'missing':
      return { scheme: guard.scheme, error: new UnauthenticatedError(`this route needs ${guard.names}: send "Authorization: ${guard.scheme} <secret>"`) };
    case 'malformed':
      return { scheme: guard.scheme, error: new UnauthenticatedError(`this route needs ${guard.names}: the Authorization header must be "${guard.scheme} <secret>"`) };
    case 'wrong':
      return { scheme: guard.scheme, error: new UnauthenticatedError(`this route needs ${guard.names}: the one sent is not this service's`) };
  }
}

/**
 * Guards the routes `guarded` names on `instance` with an `onRequest` hook, the first thing Fastify runs for
 * a request once it has matched its route, before its body is read or parsed: a refused request is answered
 * 401 `Unauthenticated` (the error body every mink HTTP error has, with `WWW-Authenticate`) and its body is
 * never read (`refuseUnread`). Add the hook before any other `onRequest` hook, so that an unauthenticated
 * request costs nothing else (the in-flight body bytes of `createHttpAdapter`).
 */
export function guardRoutes(instance: FastifyInstance, guarded: readonly GuardedRoutes[]): void {
  if (guarded.length === 0) return;
  instance.addHook('onRequest', (request, reply, done) => {
    const refusal = refusalOf(guarded, request.routeOptions.url, request.headers.authorization);
    if (refusal === null) return done();
    void reply.header('www-authenticate', `${refusal.scheme} realm="mink"`);
    refuseUnread(request, reply, refusal.error);
  });
}

function digestOf(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}
