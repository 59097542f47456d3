import { Module, type DynamicModule } from '@nestjs/common';
import { HealthController, SERVICE_STATE, type ServiceState } from '@mink/runtime';
import { TablesController } from './tables.controller';
import { ClusterController } from './cluster.controller';
import { GatewayService } from './gateway.service';

@Module({})
export class GatewayModule {
  static register(state: ServiceState, service: GatewayService): DynamicModule {
    return {
      module: GatewayModule,
      controllers: [HealthController, TablesController, ClusterController],
      providers: [
        { provide: SERVICE_STATE, useValue: state },
        { provide: GatewayService, useValue: service },
      ],
    };
  }
}
