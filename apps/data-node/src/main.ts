import 'reflect-metadata';
import { assertLimits, dataNodeExposureOf, readServiceConfig } from '@mink/config';
import { applyHeapGrowing, connectNatsRequests, createService, startService } from '@mink/runtime';
import { DataNode } from './data-node';
import { DataNodeModule } from './data-node.module';

/**
 * A data node: registers a fresh incarnation (a higher node epoch on every start, and again whenever it
 * finds itself fenced), heartbeats, tails the view and opens or closes the buckets it should lead
 * (docs/ownership.md), and serves the data path of the buckets it leads.
 */
async function main(): Promise<void> {
  assertLimits();
  const config = readServiceConfig(process.env);
  // Secure by default: Kafka and the internal scans reach no one beyond this machine without their credentials unless told so.
  const exposure = dataNodeExposureOf(config);
  if (exposure !== null) throw new Error(exposure);
  applyHeapGrowing(config.heapGrowingPercent);
  const app = await createService(DataNodeModule.register(config), { routeSecrets: config });
  connectNatsRequests(app);
  // The incarnation registers the address of the HTTP server (MINK_HTTP_PORT may be 0): it begins once that listens.
  await startService(app, { beforeServing: (httpPort) => app.get(DataNode).begin(httpPort) });
}

main().catch((error) => {
  // eslint-disable-next-line no-console
  console.error(error);
  process.exit(1);
});
