import { Module, type DynamicModule } from '@nestjs/common';
import type { ServiceConfig } from '@mink/config';
import { ClusterMember, LOGGER, NATS_REQUEST_TRANSPORT, NatsRequestTransport, SERVICE_CONFIG, ServiceModule, type Logger } from '@mink/runtime';
import { Coordinator } from './coordinator';
import { CoordinatorRequestsController, coordinatorRoutes } from './coordinator-requests.controller';

/**
 * A coordinator replica: the service shell (config, logger, health, cluster membership), the Coordinator,
 * and its NATS endpoints (SUBJECTS.coordinatorRpc in the replicas' queue group, and its own direct subject).
 */
@Module({})
export class CoordinatorModule {
  static register(config: ServiceConfig): DynamicModule {
    return {
      module: CoordinatorModule,
      imports: [ServiceModule.forRoot({ role: 'coordinator', config, connectionName: config.nodeId })],
      controllers: [CoordinatorRequestsController],
      providers: [
        Coordinator,
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
