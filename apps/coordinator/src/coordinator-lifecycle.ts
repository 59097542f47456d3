import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { Coordinator } from '@mink/coordination';
import { LOGGER, type Logger } from '@mink/runtime';

/**
 * The Coordinator's life: it starts competing for the lease once the application is bootstrapped, and stops
 * (lease released, loops finished) at shutdown, after the NATS endpoints have closed and before the process
 * leaves the cluster.
 */
@Injectable()
export class CoordinatorLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    @Inject(Coordinator) private readonly coordinator: Coordinator,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): Promise<void> {
    return this.coordinator.start();
  }

  async onApplicationShutdown(): Promise<void> {
    try {
      await this.coordinator.stop();
    } catch (error) {
      this.logger.error({ err: error }, 'error while stopping the coordinator');
    }
  }
}
