import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { unauthenticatedErrorOf, type AccessPolicy } from '@mink/http-api';
import type { MinkError } from '@mink/protocol';
import { refuseUnread } from '@mink/runtime';
import { ACCESS_POLICY } from './access.guard';

/**
 * Route patterns of the gateway that ask for no bearer token: health, metrics (guarded by their own token
 * when there is one, see guardRoutes of @mink/runtime) and the console's files (the console asks its user for
 * a token and sends it on its API calls). Every other request, one that matches no route included, needs one.
 */
export const OPEN_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics', '/console', '/console/*']);

/**
 * Why a request to the route of pattern `route` (undefined: it matches none) with header `authorization` is
 * refused before its body is read, or null when it may go on: an open route may; any other needs a token the
 * policy issued. Only that is checked here: whether the token allows the operation on its table is the
 * route's AccessGuard's to decide, once the body (which may name the table) is parsed.
 */
export function unauthenticatedRefusalOf(policy: AccessPolicy, route: string | undefined, authorization: string | undefined): MinkError | null {
  if (route !== undefined && OPEN_ROUTES.has(route)) return null;
  return unauthenticatedErrorOf(policy, authorization);
}

/**
 * With a tokens file (MINK_AUTH_TOKENS_FILE), refuses a request without a token the gateway issued with 401
 * from an `onRequest` hook, the first step of Fastify's handling of a request once its route is matched:
 * before its body is read, held or parsed (see refuseUnread), so an unauthenticated caller cannot make the
 * gateway buffer up to `LIMITS.httpBodyBytesMax` per request. The AccessGuard then checks scopes and tables.
 */
@Injectable()
export class BearerTokenHook implements OnModuleInit {
  constructor(
    @Inject(ACCESS_POLICY) private readonly policy: AccessPolicy | null,
    @Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** Adds the hook; Fastify binds hooks to routes when it gets ready, after the modules are initialized. */
  onModuleInit(): void {
    const policy = this.policy;
    if (policy === null) return;
    const instance = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    instance.addHook('onRequest', (request, reply, done) => {
      const refusal = unauthenticatedRefusalOf(policy, request.routeOptions.url, request.headers.authorization);
      if (refusal === null) return done();
      refuseUnread(request, reply, refusal);
    });
  }
}
