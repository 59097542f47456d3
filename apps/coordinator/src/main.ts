import 'reflect-metadata';
import { assertLimits, readServiceConfig } from '@mink/config';
import { applyHeapGrowing, connectNatsRequests, createService, startService } from '@mink/runtime';
import { CoordinatorModule } from './coordinator.module';

/** A coordinator replica: competes for the lease; only the holder runs assignment and the tick loop. */
async function main(): Promise<void> {
  assertLimits();
  const config = readServiceConfig(process.env);
  applyHeapGrowing(config.heapGrowingPercent);
  const app = await createService(CoordinatorModule.register(config), { routeSecrets: config });
  connectNatsRequests(app);
  await startService(app);
}

main().catch((error) => {
  // eslint-disable-next-line no-console
  console.error(error);
  process.exit(1);
});
