import { Module, type DynamicModule } from '@nestjs/common';
import { LIMITS, type ServiceConfig } from '@mink/config';
import { Coordinator } from '@mink/coordination';
import { ClusterMember, LOGGER, NATS_REQUEST_TRANSPORT, NatsRequestTransport, SERVICE_CONFIG, SERVICE_STATE, ServiceModule, type Logger, type ServiceState } from '@mink/runtime';
import { CoordinatorLifecycle } from './coordinator-lifecycle';
import { CoordinatorRequestsController, coordinatorRoutes } from './coordinator-requests.controller';

/**
 * A coordinator replica: the service shell (config, logger, health, cluster membership), the Coordinator
 * (@mink/coordination) and its life (CoordinatorLifecycle), and its NATS endpoints (SUBJECTS.coordinatorRpc
 * in the replicas' queue group, and its own direct subject).
 */
@Module({})
export class CoordinatorModule {
  static register(config: ServiceConfig): DynamicModule {
    return {
      module: CoordinatorModule,
      imports: [ServiceModule.forRoot({ role: 'coordinator', config, connectionName: config.nodeId, metaTailPaceMs: LIMITS.metaTailPacedIntervalMs })],
      controllers: [CoordinatorRequestsController],
      providers: [
        {
          provide: Coordinator,
          useFactory: (member: ClusterMember, logger: Logger, state: ServiceState) => new Coordinator(member, logger, state),
          inject: [ClusterMember, LOGGER, SERVICE_STATE],
        },
        CoordinatorLifecycle,
        {
          provide: NATS_REQUEST_TRANSPORT,
          useFactory: (member: ClusterMember, serviceConfig: ServiceConfig, logger: Logger) =>
            new NatsRequestTransport(member.nc, coordinatorRoutes(serviceConfig.nodeId), (error) => logger.error({ err: error }, 'coordinator request failed')),
          inject: [ClusterMember, SERVICE_CONFIG, LOGGER],
        },
      ],
    };
  }
}
