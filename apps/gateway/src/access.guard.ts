import { Inject, Injectable, SetMetadata, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { authorize, type AccessPolicy, type AccessScope } from '@mink/http-api';

/** The gateway's access policy (see @mink/http-api access.ts); null: no credentials asked for. */
export const ACCESS_POLICY = Symbol('AccessPolicy');

export { loadAccessPolicy } from '@mink/protocol';

/** Where a route finds the table it acts on: a route parameter, a field of the JSON body, or none (the cluster, every table). */
export type TableOfRoute = { param: string } | { bodyField: string } | null;

interface RouteAccess {
  scope: AccessScope;
  table: TableOfRoute;
}

const ROUTE_ACCESS = 'mink:access';

/** What a route needs: `scope`, on the table `table` names (absent: the route concerns no single table). */
export const Access = (scope: AccessScope, table: TableOfRoute = null) => SetMetadata(ROUTE_ACCESS, { scope, table } satisfies RouteAccess);

/**
 * Checks the bearer token of every request to a route marked with `Access` against the policy; with no
 * policy every request passes. A route of a guarded controller without `Access` is refused, so a new
 * route cannot go out unguarded by omission. The token itself is never logged nor echoed.
 */
@Injectable()
export class AccessGuard implements CanActivate {
  constructor(
    @Inject(ACCESS_POLICY) private readonly policy: AccessPolicy | null,
    @Inject(Reflector) private readonly reflector: Reflector,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (this.policy === null) return true;
    const access = this.reflector.get<RouteAccess | undefined>(ROUTE_ACCESS, context.getHandler());
    if (access === undefined) throw new Error(`route ${context.getClass().name}.${context.getHandler().name} declares no access scope`);
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    authorize(this.policy, request.headers.authorization, { scope: access.scope, table: tableOf(access.table, request) });
    return true;
  }
}

function tableOf(table: TableOfRoute, request: FastifyRequest): string | undefined {
  if (table === null) return undefined;
  const value = 'param' in table ? (request.params as Record<string, unknown> | undefined)?.[table.param] : (request.body as Record<string, unknown> | null | undefined)?.[table.bodyField];
  return typeof value === 'string' ? value : undefined;
}
