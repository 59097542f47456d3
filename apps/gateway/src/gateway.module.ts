import { Module, type DynamicModule } from '@nestjs/common';
import { LIMITS, type ServiceConfig } from '@mink/config';
import { MinkClient } from '@mink/client';
import { GatewayService, type AccessPolicy } from '@mink/http-api';
import { ClusterMember, HealthController, SERVICE_CONFIG, SERVICE_STATE, ServiceModule, type ServiceState, type TlsCredentials } from '@mink/runtime';
import { ACCESS_POLICY, loadAccessPolicy } from './access.guard';
import { BearerTokenHook } from './bearer-token.hook';
import { TablesController } from './tables.controller';
import { ClusterController } from './cluster.controller';
import { ConsoleController } from './console.controller';
import { KafkaController } from './kafka.controller';
import { GATEWAY_TLS, GrpcListener } from './grpc.listener';

const API_CONTROLLERS = [TablesController, ClusterController, KafkaController, ConsoleController];

/** The gateway: the public API (docs/architecture.md §12) over HTTP and gRPC, over its own view and the TypeScript client. */
@Module({})
export class GatewayModule {
  /**
   * The gateway process: the service shell (config, logger, health, cluster membership), the client and the
   * API; `tls` (MINK_TLS_CERT_FILE and MINK_TLS_KEY_FILE, read by main) puts the gRPC listener on TLS.
   */
  static register(config: ServiceConfig, tls: TlsCredentials | null = null): DynamicModule {
    return {
      module: GatewayModule,
      imports: [ServiceModule.forRoot({ role: 'gateway', config, connectionName: `gateway-${config.nodeId}`, metaTailPaceMs: LIMITS.metaTailPacedIntervalMs })],
      controllers: API_CONTROLLERS,
      providers: [
        {
          provide: MinkClient,
          useFactory: (member: ClusterMember, serviceConfig: ServiceConfig) =>
            MinkClient.over(member.nc, {
              appendsInFlightPerBucket: serviceConfig.appendsInFlightPerBucket,
              pipelinedAppendBytesMin: serviceConfig.pipelinedAppendBytesMin,
              // Scan pages from the data nodes' internal route, which asks for the cluster secret when there is one.
              ...(serviceConfig.clusterSecret ? { clusterSecret: serviceConfig.clusterSecret.reveal() } : {}),
            }),
          inject: [ClusterMember, SERVICE_CONFIG],
        },
        { provide: GatewayService, useFactory: (member: ClusterMember, client: MinkClient) => new GatewayService(member, client), inject: [ClusterMember, MinkClient] },
        // Bearer tokens when MINK_AUTH_TOKENS_FILE names a file (a file that cannot be used stops the start).
        { provide: ACCESS_POLICY, useFactory: (serviceConfig: ServiceConfig) => loadAccessPolicy(serviceConfig.authTokensFile), inject: [SERVICE_CONFIG] },
        // A request without an issued token is refused before its body is read.
        BearerTokenHook,
        // The gRPC API (MINK_GRPC_PORT) over the same service and tokens, and the same certificate.
        { provide: GATEWAY_TLS, useValue: tls },
        GrpcListener,
      ],
    };
  }

  /** The API and the health endpoints over a given service, without joining a cluster (tests of the HTTP layer). */
  static over(service: GatewayService, state: ServiceState, policy: AccessPolicy | null = null): DynamicModule {
    return {
      module: GatewayModule,
      controllers: [HealthController, ...API_CONTROLLERS],
      providers: [
        { provide: GatewayService, useValue: service },
        { provide: SERVICE_STATE, useValue: state },
        { provide: ACCESS_POLICY, useValue: policy },
        BearerTokenHook,
      ],
    };
  }
}
