import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { LIMITS } from '@mink/config';
import type { AccessPolicy, GatewayService } from '@mink/http-api';
import { createHttpAdapter, HttpErrorFilter, InFlightBytes, ServiceState } from '@mink/runtime';
import { GatewayModule } from './gateway.module';
import { APPEND_ROUTE } from './tables.controller';

/**
 * The gateway's HTTP layer over `service` (usually a recorder or a service over fakes), on the real
 * Nest/Fastify stack and error mapping but joining no cluster, ready for `inject`; the caller closes it.
 * `policy` asks for bearer tokens as MINK_AUTH_TOKENS_FILE would; `inFlight` bounds request bodies.
 */
export async function startGatewayOver(
  service: GatewayService,
  options: { policy?: AccessPolicy | null; inFlight?: InFlightBytes } = {},
): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(
    GatewayModule.over(service, new ServiceState('gateway', 'test'), options.policy ?? null),
    createHttpAdapter(options.inFlight ?? new InFlightBytes(LIMITS.httpInFlightBodyBytesMax), { rawJsonRoutes: new Set([APPEND_ROUTE]) }),
    { logger: false, bodyParser: false },
  );
  app.useGlobalFilters(new HttpErrorFilter());
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}
