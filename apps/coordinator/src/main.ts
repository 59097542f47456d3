import 'reflect-metadata';
import { assertLimits, readServiceConfig } from '@mink/config';
import { ClusterMember, ServiceState, createLogger, runHttpService } from '@mink/runtime';
import { CoordinatorModule } from './coordinator.module';
import { Coordinator } from './coordinator';

/** A coordinator replica: competes for the lease; only the holder runs assignment and the tick loop. */
async function main(): Promise<void> {
  assertLimits();
  const config = readServiceConfig(process.env);
  const logger = createLogger('coordinator', config.nodeId, config.logLevel);
  const state = new ServiceState('coordinator', config.nodeId);
  const member = await ClusterMember.join(config, logger, config.nodeId);
  member.registerMetrics(state.registry);
  const coordinator = new Coordinator(member, logger, state);
  await runHttpService({
    module: CoordinatorModule.register(state),
    port: config.httpPort,
    host: config.httpBindHost,
    logger,
    shutdown: async () => {
      await coordinator.stop();
      await member.close();
    },
  });
  await coordinator.start();
  state.setReady(true);
  logger.info({ leaseTtlMs: config.leaseTtlMs, coordinatorTickMs: config.coordinatorTickMs }, 'coordinator replica started');
}

main().catch((error) => {
  // eslint-disable-next-line no-console
  console.error(error);
  process.exit(1);
});
