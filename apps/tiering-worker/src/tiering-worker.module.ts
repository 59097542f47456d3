import { Inject, Injectable, Module, type DynamicModule, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { LIMITS, type ServiceConfig } from '@mink/config';
import { ClusterMember, LOGGER, SERVICE_CONFIG, SERVICE_STATE, ServiceModule, type Logger, type ServiceState } from '@mink/runtime';
import { Gauge } from 'prom-client';
import { TieringLoop, type TieringWorkerConfig } from '@mink/tiering';

/**
 * The worker's life: its loop's counts are Prometheus gauges (read at scrape time); the loop starts once the
 * application is bootstrapped and stops, its round in flight finished, before the process leaves the cluster.
 */
@Injectable()
export class TieringWorker implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    @Inject(TieringLoop) private readonly loop: TieringLoop,
    @Inject(SERVICE_STATE) private readonly state: ServiceState,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onModuleInit(): void {
    const { loop, state } = this;
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

  onApplicationBootstrap(): void {
    this.loop.start();
  }

  async onApplicationShutdown(): Promise<void> {
    try {
      await this.loop.stop();
    } catch (error) {
      this.logger.error({ err: error }, 'error while stopping the tiering loop');
    }
  }
}

/**
 * The tiering worker (docs/architecture.md §9): the service shell (it joins the cluster for its view and
 * liveness) and the TieringLoop, which takes due rounds from the coordinator lease holder and tiers them into
 * the tables' Iceberg lakes. It serves no NATS endpoint.
 */
@Module({})
export class TieringWorkerModule {
  static register(config: ServiceConfig, tieringConfig: TieringWorkerConfig): DynamicModule {
    return {
      module: TieringWorkerModule,
      imports: [ServiceModule.forRoot({ role: 'tiering-worker', config, connectionName: `tiering-worker-${config.nodeId}`, metaTailPaceMs: LIMITS.metaTailPacedIntervalMs })],
      providers: [
        {
          provide: TieringLoop,
          useFactory: (member: ClusterMember, logger: Logger, serviceConfig: ServiceConfig) =>
            new TieringLoop(member, logger, serviceConfig.nodeId, { orphanGraceMs: tieringConfig.orphanGraceMs }),
          inject: [ClusterMember, LOGGER, SERVICE_CONFIG],
        },
        TieringWorker,
      ],
    };
  }
}
