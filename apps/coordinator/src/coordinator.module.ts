import { Module, type DynamicModule } from '@nestjs/common';
import { HealthController, SERVICE_STATE, type ServiceState } from '@mink/runtime';

@Module({})
export class CoordinatorModule {
  static register(state: ServiceState): DynamicModule {
    return { module: CoordinatorModule, controllers: [HealthController], providers: [{ provide: SERVICE_STATE, useValue: state }] };
  }
}
