import { Module, type DynamicModule } from '@nestjs/common';
import { HealthController, SERVICE_STATE, type ServiceState } from '@mink/runtime';
import { InternalScanController } from './internal-scan.controller';
import { InternalScans } from './internal-scans';

@Module({})
export class DataNodeModule {
  static register(state: ServiceState, scans: InternalScans): DynamicModule {
    return {
      module: DataNodeModule,
      controllers: [HealthController, InternalScanController],
      providers: [
        { provide: SERVICE_STATE, useValue: state },
        { provide: InternalScans, useValue: scans },
      ],
    };
  }
}
