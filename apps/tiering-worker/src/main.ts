import 'reflect-metadata';
import { Module, type DynamicModule } from '@nestjs/common';
import { assertLimits, readServiceConfig } from '@mink/config';
import { ClusterMember, HealthController, SERVICE_STATE, ServiceState, createLogger, runHttpService } from '@mink/runtime';
import { Gauge } from 'prom-client';
import { readTieringWorkerConfig } from './tiering-config';
import { TieringLoop } from './tiering-loop';

/** The loop's counts as Prometheus gauges, read at scrape time. */
function registerTieringMetrics(state: ServiceState, loop: TieringLoop): void {
  new Gauge({
    name: 'mink_tiering_rounds',
    help: 'Tiering rounds of this worker since it started, by outcome',
    labelNames: ['outcome'],
    registers: [state.registry],
    collect() {
      this.set({ outcome: 'committed' }, loop.counts.roundsCommitted);
      this.set({ outcome: 'fenced' }, loop.counts.roundsFenced);
      this.set({ outcome: 'failed' }, loop.counts.roundsFailed);
    },
  });
  new Gauge({
    name: 'mink_lake_orphans_deleted',
    help: 'Unreferenced lake objects the orphan sweeps after this worker\'s rounds deleted since it started',
    registers: [state.registry],
    collect() {
      this.set(loop.counts.orphansDeleted);
    },
  });
  new Gauge({
    name: 'mink_tiering_rows',
    help: 'Rows this worker tiered into the lake since it started',
    registers: [state.registry],
    collect() {
      this.set(loop.counts.rowsTiered);
    },
  });
}

@Module({})
class TieringWorkerModule {
  static register(state: ServiceState): DynamicModule {
    return { module: TieringWorkerModule, controllers: [HealthController], providers: [{ provide: SERVICE_STATE, useValue: state }] };
  }
}

/**
 * The tiering worker (docs/architecture.md §9): joins the cluster (view and liveness) and runs the TieringLoop, which
 * takes due rounds from the coordinator lease holder and tiers them into the tables' Iceberg lakes.
 */
async function main(): Promise<void> {
  assertLimits();
  const config = readServiceConfig(process.env);
  const tieringConfig = readTieringWorkerConfig(process.env);
  const logger = createLogger('tiering-worker', config.nodeId, config.logLevel);
  const state = new ServiceState('tiering-worker', config.nodeId);
  const member = await ClusterMember.join(config, logger, `tiering-worker-${config.nodeId}`);
  member.registerMetrics(state.registry);
  const loop = new TieringLoop(member, logger, config.nodeId, { orphanGraceMs: tieringConfig.orphanGraceMs });
  registerTieringMetrics(state, loop);
  await runHttpService({
    module: TieringWorkerModule.register(state),
    port: config.httpPort,
    host: config.httpBindHost,
    logger,
    shutdown: async () => {
      await loop.stop();
      await member.close();
    },
  });
  loop.start();
  state.setReady(true);
  logger.info({ orphanGraceMs: tieringConfig.orphanGraceMs }, 'tiering worker started');
}

main().catch((error) => {
  // eslint-disable-next-line no-console
  console.error(error);
  process.exit(1);
});
