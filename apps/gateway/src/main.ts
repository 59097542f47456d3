import 'reflect-metadata';
import { assertLimits, readServiceConfig, DEFAULTS } from '@mink/config';
import { MinkClient } from '@mink/client';
import { ClusterMember, ServiceState, createLogger, runHttpService } from '@mink/runtime';
import { GatewayModule } from './gateway.module';
import { GatewayService } from './gateway.service';
import { APPEND_ROUTE } from './tables.controller';

/** The HTTP gateway: the public API of docs/architecture.md §12 over the TypeScript client and its own view. */
async function main(): Promise<void> {
  assertLimits();
  const config = readServiceConfig(process.env, { httpPort: DEFAULTS.gatewayPort });
  const logger = createLogger('gateway', config.nodeId, config.logLevel);
  const state = new ServiceState('gateway', config.nodeId);
  const member = await ClusterMember.join(config, logger, `gateway-${config.nodeId}`);
  member.registerMetrics(state.registry);
  const client = MinkClient.over(member.nc, { appendsInFlightPerBucket: config.appendsInFlightPerBucket });
  const service = new GatewayService(member, client);
  await runHttpService({
    module: GatewayModule.register(state, service),
    port: config.httpPort,
    host: config.httpBindHost,
    logger,
    shutdown: async () => {
      await member.close();
    },
    // Appends read their JSON bytes straight into Arrow (GatewayService.append).
    rawJsonRoutes: new Set([APPEND_ROUTE]),
  });
  state.setReady(true);
  logger.info({ port: config.httpPort }, 'gateway listening');
}

main().catch((error) => {
  // eslint-disable-next-line no-console
  console.error(error);
  process.exit(1);
});
