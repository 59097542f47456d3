import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Counter, Histogram } from 'prom-client';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { DynamicModule, Type } from '@nestjs/common';
import type { Logger } from 'pino';
import type { ServiceConfig } from '@mink/config';
import { METHODS } from 'node:http';
import { createHttpAdapter } from './http-adapter';
import { HttpErrorFilter } from './http-errors';
import { applyHttpTimeouts } from './http-timeouts';
import type { RouteSecrets } from './route-credentials';
import { LOGGER, SERVICE_CONFIG } from './service-module';
import { SERVICE_STATE, type ServiceState } from './service-state';
import type { TlsCredentials } from './tls-credentials';

/** Signals that stop a service cleanly (a clean leave, then exit code 0). */
const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * Creates a service's Nest application over mink's Fastify adapter (see createHttpAdapter) from its root
 * module, which imports `ServiceModule`: building the providers joins the cluster. A service with NATS
 * endpoints then connects its transport (`connectNatsRequests`). With `https` it serves HTTPS only.
 * `routeSecrets` (the service's `ServiceConfig`) are the secrets its internal routes and `/metrics` ask for;
 * required, so that no service is started with them open by omission. A provider that fails to build rejects
 * (Nest would otherwise `process.abort()`).
 */
export async function createService(
  module: Type<unknown> | DynamicModule,
  options: { routeSecrets: RouteSecrets; rawJsonRoutes?: ReadonlySet<string>; https?: TlsCredentials | null },
): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(
    module,
    createHttpAdapter(undefined, { rawJsonRoutes: options.rawJsonRoutes, https: options.https, routeSecrets: options.routeSecrets }),
    // The adapter parses JSON bodies itself (strictly); Nest's own parser would replace it.
    { logger: ['error', 'warn'], bodyParser: false, abortOnError: false },
  );
  app.useGlobalFilters(new HttpErrorFilter(app.get<Logger>(LOGGER)));
  countHttpRequests(app);
  return app;
}

/** The methods a `method` label takes as they are; Node's parser knows no others, and anything else would be `other`. */
const KNOWN_METHODS: ReadonlySet<string> = new Set(METHODS);

/**
 * Counts every HTTP answer of the service by method, route pattern (`/v1/tables/:name/append`, not the
 * path, so tables do not multiply the series; `unmatched` for a 404 of no route) and status, and times it.
 * No label takes a string of the caller's as it is: the route is one of the service's patterns and the
 * method one of the known ones.
 */
function countHttpRequests(app: NestFastifyApplication): void {
  const registers = [app.get<ServiceState>(SERVICE_STATE).registry];
  const requests = new Counter({ name: 'mink_http_requests_total', help: 'HTTP requests answered, by method, route and status', labelNames: ['method', 'route', 'status'], registers });
  const seconds = new Histogram({
    name: 'mink_http_request_seconds',
    help: 'Time from an HTTP request to its answer, by method and route',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      const method = KNOWN_METHODS.has(request.method) ? request.method : 'other';
      requests.inc({ method, route, status: String(reply.statusCode) });
      seconds.observe({ method, route }, reply.elapsedTime / 1000);
      done();
    });
}

/**
 * Starts a service created by `createService`, in this order: the lifecycle hooks (`onModuleInit`, then
 * `onApplicationBootstrap`), the HTTP server (on the port and address of its `ServiceConfig`, with its HTTP timeouts),
 * `beforeServing` with the port it is bound to (a data node registers its incarnation with that address),
 * the NATS endpoints, and readiness.
 *
 * SIGTERM and SIGINT then close the application once through Nest's shutdown hooks
 * (`beforeApplicationShutdown`, then the HTTP server and the NATS endpoints, then `onApplicationShutdown`)
 * and exit with code 0 (`useProcessExit`: Nest would otherwise re-raise the signal, and `mink up` and the
 * tests take an exit by signal for a crash). An uncaught error is logged and ends the process with code 1,
 * because a service in an unknown state must not go on serving.
 */
export async function startService(app: NestFastifyApplication, options: { beforeServing?: (httpPort: number) => Promise<void> } = {}): Promise<{ port: number }> {
  const logger = app.get<Logger>(LOGGER);
  // httpBindHost: loopback unless the service is meant to be reached from elsewhere.
  const { httpPort, httpBindHost, httpHeadersTimeoutMs, httpRequestTimeoutMs, httpKeepAliveTimeoutMs, httpConnectionsMax } = app.get<ServiceConfig>(SERVICE_CONFIG);
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception');
    process.exit(1);
  });
  process.on('unhandledRejection', (error) => {
    logger.fatal({ err: error }, 'unhandled rejection');
    process.exit(1);
  });
  // Before listening: Node.js reads how often to check the timeouts when the server starts.
  applyHttpTimeouts(app.getHttpServer(), { headersTimeoutMs: httpHeadersTimeoutMs, requestTimeoutMs: httpRequestTimeoutMs, keepAliveTimeoutMs: httpKeepAliveTimeoutMs });
  // A connection beyond this many is dropped as it is accepted (idle and slow ones are closed by the timeouts above).
  app.getHttpServer().maxConnections = httpConnectionsMax;
  await app.listen(httpPort, httpBindHost);
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : httpPort;
  for (const signal of STOP_SIGNALS) process.once(signal, () => logger.info({ signal }, 'stopping'));
  app.enableShutdownHooks([...STOP_SIGNALS], { useProcessExit: true });
  await options.beforeServing?.(port);
  await app.startAllMicroservices();
  app.get<ServiceState>(SERVICE_STATE).setReady(true);
  logger.info({ httpPort: port }, 'started');
  return { port };
}
