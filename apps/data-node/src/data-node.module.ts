import { Module, type DynamicModule } from '@nestjs/common';
import type { ServiceConfig } from '@mink/config';
import { MinkClient } from '@mink/client';
import { lakeStoreUri } from '@mink/lake';
import { ClusterMember, LOGGER, NATS_REQUEST_TRANSPORT, NatsRequestTransport, OBJECT_STORE, SERVICE_CONFIG, SERVICE_STATE, ServiceModule, type Logger, type ServiceState } from '@mink/runtime';
import { StreamReader, type S3ObjectStore } from '@mink/s3stream';
import { BucketSyncMetrics, DataNodeKafkaBackend, DataNodeMetrics, InternalScans, LakeReads } from '@mink/data-plane';
import { CurrentIncarnation } from './current-incarnation';
import { kafkaListenerOf } from './kafka-listener-of';
import { DataNode, KAFKA_LISTENER } from './data-node';
import { InternalScanController } from './internal-scan.controller';
import { NodeHeartbeats } from './node-heartbeats';
import { NodeRequestsController, nodeRoutes } from './node-requests.controller';

/**
 * A data node: the service shell (joined with its heartbeats already running, see NodeHeartbeats), the
 * DataNode and its current incarnation, the readers the incarnations share, the Kafka listener, and the
 * endpoints: NATS (its own subject, and the any-node subject in the nodes' queue group) and HTTP (health,
 * metrics, the internal scan route).
 */
@Module({})
export class DataNodeModule {
  static register(config: ServiceConfig): DynamicModule {
    return {
      module: DataNodeModule,
      imports: [ServiceModule.forRoot({ role: 'data-node', config, connectionName: `data-node-${config.nodeId}`, beforeCatchUp: NodeHeartbeats })],
      controllers: [NodeRequestsController, InternalScanController],
      providers: [
        CurrentIncarnation,
        DataNode,
        { provide: BucketSyncMetrics, useFactory: (state: ServiceState) => new BucketSyncMetrics(state), inject: [SERVICE_STATE] },
        {
          // Labels name only tables of the view (never a table name as a request spells it).
          provide: DataNodeMetrics,
          useFactory: (state: ServiceState, member: ClusterMember) => new DataNodeMetrics(state.registry, () => member.view),
          inject: [SERVICE_STATE, ClusterMember],
        },
        {
          provide: StreamReader,
          useFactory: (objectStore: S3ObjectStore, member: ClusterMember) =>
            new StreamReader({ store: objectStore, meta: member.store, cacheBytesMax: config.streamTailCacheBytes, readCacheBytesMax: config.streamReadCacheBytes }),
          inject: [OBJECT_STORE, ClusterMember],
        },
        {
          // The union read's lake side, shared by the incarnations of the process (its caches outlive them).
          provide: LakeReads,
          useFactory: (objectStore: S3ObjectStore) => new LakeReads(objectStore, lakeStoreUri(objectStore.bucket, objectStore.prefix), config.lakeFileCacheBytes),
          inject: [OBJECT_STORE],
        },
        {
          // Health, metrics and the internal scan route (scan pages for gateways and clients, see InternalScans).
          provide: InternalScans,
          useFactory: (serviceConfig: ServiceConfig, current: CurrentIncarnation, state: ServiceState, metrics: DataNodeMetrics) =>
            new InternalScans(serviceConfig.nodeId, () => current.data(), state.registry, metrics),
          inject: [SERVICE_CONFIG, CurrentIncarnation, SERVICE_STATE, DataNodeMetrics],
        },
        {
          provide: MinkClient,
          useFactory: (member: ClusterMember, serviceConfig: ServiceConfig) =>
            MinkClient.over(member.nc, serviceConfig.clusterSecret ? { clusterSecret: serviceConfig.clusterSecret.reveal() } : {}),
          inject: [ClusterMember, SERVICE_CONFIG],
        },
        {
          // Topics are kafka-format tables, served through the current incarnation (docs/architecture.md §12).
          provide: DataNodeKafkaBackend,
          useFactory: (member: ClusterMember, client: MinkClient, serviceConfig: ServiceConfig, current: CurrentIncarnation, logger: Logger, metrics: DataNodeMetrics) =>
            new DataNodeKafkaBackend(member, client, serviceConfig, () => current.data(), logger, metrics),
          inject: [ClusterMember, MinkClient, SERVICE_CONFIG, CurrentIncarnation, LOGGER, DataNodeMetrics],
        },
        {
          provide: KAFKA_LISTENER,
          useFactory: (serviceConfig: ServiceConfig, backend: DataNodeKafkaBackend, logger: Logger) =>
            kafkaListenerOf(serviceConfig, backend, logger),
          inject: [SERVICE_CONFIG, DataNodeKafkaBackend, LOGGER],
        },
        {
          provide: NATS_REQUEST_TRANSPORT,
          useFactory: (member: ClusterMember, serviceConfig: ServiceConfig, logger: Logger) =>
            new NatsRequestTransport(member.nc, nodeRoutes(serviceConfig.nodeId), (error) => logger.error({ err: error }, 'node request failed')),
          inject: [ClusterMember, SERVICE_CONFIG, LOGGER],
        },
      ],
    };
  }
}
