import 'reflect-metadata';
import { Module, type DynamicModule } from '@nestjs/common';
import { assertLimits, readServiceConfig } from '@mink/config';
import { ClusterMember, HealthController, SERVICE_STATE, ServiceState, createLogger, runHttpService } from '@mink/runtime';

@Module({})
class TieringWorkerModule {
  static register(state: ServiceState): DynamicModule {
    return { module: TieringWorkerModule, controllers: [HealthController], providers: [{ provide: SERVICE_STATE, useValue: state }] };
  }
}

/**
 * The tiering worker. It joins the cluster (view and liveness) and waits for rounds from the
 * coordinator; executing rounds (Parquet for lake engines) is not built yet.
 */
async function main(): Promise<void> {
  assertLimits();
  const config = readServiceConfig(process.env);
  const logger = createLogger('tiering-worker', config.nodeId, config.logLevel);
  const state = new ServiceState('tiering-worker', config.nodeId);
  const member = await ClusterMember.join(config, logger, `tiering-worker-${config.nodeId}`);
  member.registerMetrics(state.registry);
  await runHttpService({ module: TieringWorkerModule.register(state), port: config.httpPort, logger, shutdown: () => member.close() });
  state.setReady(true);
  logger.info('tiering worker started (no tiering rounds yet)');
}

main().catch((error) => {
  // eslint-disable-next-line no-console
  console.error(error);
  process.exit(1);
});
