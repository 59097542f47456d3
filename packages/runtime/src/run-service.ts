import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { DynamicModule, Type } from '@nestjs/common';
import type { Logger } from 'pino';
import { createHttpAdapter } from './http-adapter';
import { HttpErrorFilter } from './http-errors';

/**
 * Starts the HTTP side of a service (Fastify under Nest) and wires process signals: SIGTERM and SIGINT
 * run `shutdown` once (a clean leave), then close the app and exit. An uncaught error is logged and
 * ends the process, because a service in an unknown state must not go on serving.
 */
export async function runHttpService(options: {
  module: Type<unknown> | DynamicModule;
  port: number;
  /** Address to bind (`ServiceConfig.httpBindHost`): loopback unless the service is meant to be reached from elsewhere. */
  host: string;
  logger: Logger;
  shutdown: () => Promise<void>;
  /** Route patterns whose JSON bodies reach the handler as `RawJsonBody` (see createHttpAdapter). */
  rawJsonRoutes?: ReadonlySet<string>;
}): Promise<{ app: NestFastifyApplication; port: number }> {
  const { logger } = options;
  const app = await NestFactory.create<NestFastifyApplication>(
    options.module,
    createHttpAdapter(undefined, { rawJsonRoutes: options.rawJsonRoutes }),
    // The adapter parses JSON bodies itself (strictly); Nest's own parser would replace it.
    { logger: ['error', 'warn'], bodyParser: false },
  );
  app.useGlobalFilters(new HttpErrorFilter(logger));
  await app.listen(options.port, options.host);
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    try {
      await options.shutdown();
      await app.close();
    } catch (error) {
      logger.error({ err: error }, 'error while stopping');
    }
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception');
    process.exit(1);
  });
  process.on('unhandledRejection', (error) => {
    logger.fatal({ err: error }, 'unhandled rejection');
    process.exit(1);
  });
  return { app, port };
}
