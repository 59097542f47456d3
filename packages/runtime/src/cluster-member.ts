import { connect, type NatsConnection } from 'nats';
import type { ServiceConfig } from '@mink/config';
import type { View } from '@mink/meta';
import { JetStreamMetaLog, LivenessTracker, MetaStore } from '@mink/metalog';
import type { Logger } from 'pino';

/**
 * A process's membership in the cluster: its NATS connection, its own copy of the metadata view (kept
 * current by tailing the log) and its view of liveness (from the heartbeat bucket). Every service has
 * one; nothing here decides anything.
 */
export class ClusterMember {
  private constructor(
    readonly nc: NatsConnection,
    readonly store: MetaStore,
    readonly liveness: LivenessTracker,
    readonly config: ServiceConfig,
    private readonly logger: Logger,
  ) {}

  static async join(config: ServiceConfig, logger: Logger, name: string): Promise<ClusterMember> {
    const nc = await connect({ servers: config.natsUrl, name, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    const log = await JetStreamMetaLog.create(nc, { streamName: config.metaStream });
    const store = await MetaStore.open(log);
    await store.start();
    // Catch up with everything committed before we started, so the first decisions see the whole past.
    await store.waitForSeq(await log.lastSeq(), 60_000);
    const liveness = await LivenessTracker.start(nc);
    logger.info({ seq: store.view.seq }, 'joined the cluster: metadata view caught up');
    return new ClusterMember(nc, store, liveness, config, logger);
  }

  get view(): View {
    return this.store.view;
  }

  /** Data nodes that are live now: fresh heartbeat at their current epoch (DESIGN §2). */
  liveNodes(): Set<string> {
    return this.liveness.liveNodes(this.store.view, this.config.leaseTtlMs);
  }

  async close(): Promise<void> {
    await this.liveness.stop().catch(() => undefined);
    await this.store.stop().catch(() => undefined);
    await this.nc.drain().catch(() => undefined);
    this.logger.info('left the cluster');
  }
}
