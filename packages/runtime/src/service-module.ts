import { Inject, Injectable, Module, type DynamicModule, type OnApplicationShutdown, type Provider, type Type } from '@nestjs/common';
import type { NatsConnection } from 'nats';
import type { ServiceConfig } from '@mink/config';
import { ClusterMember } from './cluster-member';
import { HealthController } from './health.controller';
import { createLogger, type Logger } from './logger';
import { SERVICE_STATE, ServiceState } from './service-state';

/** The process's `ServiceConfig` (read once by its main.ts). */
export const SERVICE_CONFIG = Symbol('ServiceConfig');
/** The process's pino logger, tagged with its role and node id. */
export const LOGGER = Symbol('Logger');
/** The process's one object store client (`ClusterMember.objectStore`: its concurrency bound is per process). */
export const OBJECT_STORE = Symbol('ObjectStore');

/**
 * A provider that acts once the process is connected to NATS and before it catches up with the metadata log
 * (`ClusterMember.join`'s `onConnected`): a data node starts heartbeating there, so the coordinator sees it
 * joining while it replays the log.
 */
export interface BeforeCatchUp {
  beforeCatchUp(nc: NatsConnection): Promise<void>;
}

const BEFORE_CATCH_UP = Symbol('BeforeCatchUp');

export interface ServiceModuleOptions {
  /** 'coordinator', 'data-node', …: the logger's and the metrics' role label. */
  role: string;
  config: ServiceConfig;
  /** The NATS connection's name (seen in the server's monitoring). */
  connectionName: string;
  /** Joined into the provider graph, built before the `ClusterMember` and given its connection early. */
  beforeCatchUp?: Type<BeforeCatchUp>;
  /**
   * How often the process asks for new metadata log entries (`LIMITS.metaTailPacedIntervalMs` for a process
   * that needs no entry the moment it is written); 0 or absent: each entry as it comes.
   */
  metaTailPaceMs?: number;
}

/**
 * Leaves the cluster (`ClusterMember.close`: liveness, view, drained connection, object store) when the
 * application shuts down. It lives in the global `ServiceModule`, whose shutdown hooks Nest calls after those
 * of every other module: the connection stays open until the services built on it have stopped.
 */
@Injectable()
export class ClusterMembership implements OnApplicationShutdown {
  constructor(
    @Inject(ClusterMember) private readonly member: ClusterMember,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    try {
      await this.member.close();
    } catch (error) {
      this.logger.error({ err: error }, 'error while leaving the cluster');
    }
    this.logger.info('stopped');
  }
}

/**
 * The shell every mink service shares, as one global module: its config, logger, health state, health and
 * metrics endpoints, and its membership in the cluster. Building the module joins the cluster (the
 * `ClusterMember` factory connects and catches up with the metadata log), so every provider that injects the
 * member finds the view current. Global modules are initialised first and shut down last.
 */
@Module({})
export class ServiceModule {
  static forRoot(options: ServiceModuleOptions): DynamicModule {
    const { role, config, connectionName } = options;
    const beforeCatchUp: Provider[] = options.beforeCatchUp ? [options.beforeCatchUp, { provide: BEFORE_CATCH_UP, useExisting: options.beforeCatchUp }] : [];
    return {
      module: ServiceModule,
      global: true,
      controllers: [HealthController],
      providers: [
        { provide: SERVICE_CONFIG, useValue: config },
        { provide: LOGGER, useFactory: (): Logger => createLogger(role, config.nodeId, config.logLevel) },
        { provide: SERVICE_STATE, useFactory: () => new ServiceState(role, config.nodeId) },
        ...beforeCatchUp,
        {
          provide: ClusterMember,
          useFactory: async (logger: Logger, state: ServiceState, hook: BeforeCatchUp | undefined) => {
            const member = await ClusterMember.join(config, logger, connectionName, hook ? (nc) => hook.beforeCatchUp(nc) : undefined, options.metaTailPaceMs);
            member.registerMetrics(state.registry);
            return member;
          },
          inject: [LOGGER, SERVICE_STATE, { token: BEFORE_CATCH_UP, optional: true }],
        },
        { provide: OBJECT_STORE, useFactory: (member: ClusterMember) => member.objectStore, inject: [ClusterMember] },
        ClusterMembership,
      ],
      exports: [SERVICE_CONFIG, LOGGER, SERVICE_STATE, ClusterMember, OBJECT_STORE, ...(options.beforeCatchUp ? [options.beforeCatchUp] : [])],
    };
  }
}
