import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Inject, Injectable, Module, type BeforeApplicationShutdown, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NatsConnection } from 'nats';
import { ENV, readServiceConfig, type ServiceConfig } from '@mink/config';
import { startNatsServer, startS3Server, type NatsServerHandle, type S3ServerHandle } from '@mink/devcluster';
import { ClusterMember } from './cluster-member';
import { OBJECT_STORE, SERVICE_CONFIG, ServiceModule, type BeforeCatchUp } from './service-module';

/**
 * ServiceModule builds a service's cluster membership through Nest's DI and orders its lifecycle around the
 * app's own providers: the join hook runs while the member is built (before any provider can use the view),
 * the app's providers start after the member joined, and the member leaves the cluster only after every
 * shutdown hook of the app has run, with the connection still open for them.
 */
const BUCKET = 'mink-service-module-test';
const events: string[] = [];

@Injectable()
class RecordingJoinHook implements BeforeCatchUp {
  connection: NatsConnection | null = null;

  async beforeCatchUp(nc: NatsConnection): Promise<void> {
    this.connection = nc;
    events.push('connected, before the catch-up');
  }
}

@Injectable()
class AppService implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  constructor(
    @Inject(ClusterMember) private readonly member: ClusterMember,
    @Inject(RecordingJoinHook) readonly hook: RecordingJoinHook,
    @Inject(OBJECT_STORE) readonly objectStore: unknown,
    @Inject(SERVICE_CONFIG) readonly config: ServiceConfig,
  ) {
    events.push('app service built');
  }

  onApplicationBootstrap(): void {
    events.push('app bootstrapped');
  }

  beforeApplicationShutdown(): void {
    events.push(`app leaving, connection ${this.member.nc.isClosed() ? 'closed' : 'open'}`);
  }

  async onApplicationShutdown(): Promise<void> {
    // A request over the connection: the shell must not have drained it yet.
    await this.member.nc.flush();
    events.push(`app stopped, connection ${this.member.nc.isClosed() ? 'closed' : 'open'}`);
  }
}

describe('ServiceModule', () => {
  let dataDir: string;
  let nats: NatsServerHandle;
  let s3: S3ServerHandle;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-service-module-'));
    [nats, s3] = await Promise.all([startNatsServer({ dataDir: join(dataDir, 'nats') }), startS3Server({ dataDir: join(dataDir, 's3'), bucket: BUCKET })]);
  }, 30_000);

  afterAll(async () => {
    await Promise.all([nats?.stop(), s3?.stop()]);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('joins before the app starts and leaves after the app stopped', async () => {
    const config = readServiceConfig({ [ENV.natsUrl]: nats.url, [ENV.s3Endpoint]: s3.endpoint, [ENV.s3Bucket]: BUCKET, [ENV.logLevel]: 'silent' });

    @Module({ imports: [ServiceModule.forRoot({ role: 'test', config, connectionName: 'service-module-test', beforeCatchUp: RecordingJoinHook })], providers: [AppService] })
    class AppModule {}

    const app = await NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false });
    await app.init();
    const service = app.get(AppService);
    const member = app.get(ClusterMember);
    expect(service.hook.connection).toBe(member.nc);
    expect(service.objectStore).toBe(member.objectStore);
    expect(service.config).toBe(config);
    await app.close();
    expect(member.nc.isClosed()).toBe(true);
    expect(events).toEqual([
      'connected, before the catch-up',
      'app service built',
      'app bootstrapped',
      'app leaving, connection open',
      'app stopped, connection open',
    ]);
  });
});
