import 'reflect-metadata';
import { assertLimits, readServiceConfig } from '@mink/config';
import { applyHeapGrowing, createService, startService } from '@mink/runtime';
import { readTieringWorkerConfig } from '@mink/tiering';
import { TieringWorkerModule } from './tiering-worker.module';

/**
 * The tiering worker (docs/architecture.md §9): joins the cluster (view and liveness) and runs the TieringLoop, which
 * takes due rounds from the coordinator lease holder and tiers them into the tables' Iceberg lakes.
 */
async function main(): Promise<void> {
  assertLimits();
  const config = readServiceConfig(process.env);
  applyHeapGrowing(config.heapGrowingPercent);
  const tieringConfig = readTieringWorkerConfig(process.env);
  const app = await createService(TieringWorkerModule.register(config, tieringConfig), { routeSecrets: config });
  await startService(app);
}

main().catch((error) => {
  // eslint-disable-next-line no-console
  console.error(error);
  process.exit(1);
});
