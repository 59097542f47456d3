import { Module, type DynamicModule } from '@nestjs/common';
import { HealthController, SERVICE_STATE, type ServiceState } from '@mink/runtime';

@Module({})
export class DataNodeModule {
  static register(state: ServiceState): DynamicModule {
    return { module: DataNodeModule, controllers: [HealthController], providers: [{ provide: SERVICE_STATE, useValue: state }] };
  }
}
