import { Inject, Injectable, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import type { ServiceConfig } from '@mink/config';
import { GrpcGateway } from '@mink/grpc-api';
import { GatewayService, type AccessPolicy } from '@mink/http-api';
import { LOGGER, SERVICE_CONFIG, SERVICE_STATE, type Logger, type ServiceState, type TlsCredentials } from '@mink/runtime';
import { ACCESS_POLICY } from './access.guard';

/** The gateway's certificate and key (MINK_TLS_CERT_FILE, MINK_TLS_KEY_FILE); null: plain text. */
export const GATEWAY_TLS = Symbol('GatewayTls');

/**
 * The gateway's gRPC listener (@mink/grpc-api) in the Nest application's lifecycle: it binds
 * `MINK_GRPC_BIND_HOST:MINK_GRPC_PORT` when the application boots (before the HTTP server listens, so a
 * port in use stops the start) and stops before the application shuts down, while the cluster connection
 * its calls use is still open. Its health service follows the readiness /readyz reports. With a certificate
 * (GATEWAY_TLS) it speaks TLS only, like the HTTP API.
 */
@Injectable()
export class GrpcListener implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private grpc: GrpcGateway | null = null;

  constructor(
    @Inject(GatewayService) private readonly gateway: GatewayService,
    @Inject(ACCESS_POLICY) private readonly policy: AccessPolicy | null,
    @Inject(SERVICE_STATE) private readonly state: ServiceState,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(GATEWAY_TLS) private readonly tls: TlsCredentials | null,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const grpc = new GrpcGateway({ gateway: this.gateway, policy: this.policy, isReady: () => this.state.readiness().ready, logger: this.logger, tls: this.tls });
    const port = await grpc.listen(this.config.grpcBindHost, this.config.grpcPort);
    this.grpc = grpc;
    this.logger.info({ grpcPort: port, grpcBindHost: this.config.grpcBindHost, tls: this.tls !== null }, 'gRPC listening');
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.grpc?.stop();
  }
}
