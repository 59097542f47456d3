import 'reflect-metadata';
import { assertLimits, readServiceConfig, unauthenticatedExposureOf, DEFAULTS } from '@mink/config';
import { applyHeapGrowing, createService, readTlsCredentials, startService } from '@mink/runtime';
import { GatewayModule } from './gateway.module';
import { APPEND_ROUTE } from './tables.controller';

/** The HTTP gateway: the public API of docs/architecture.md §12 over the TypeScript client and its own view. */
async function main(): Promise<void> {
  assertLimits();
  const config = readServiceConfig(process.env, { httpPort: DEFAULTS.gatewayPort });
  applyHeapGrowing(config.heapGrowingPercent);
  // Secure by default: beyond loopback, no credentials only when said outright.
  const exposure = unauthenticatedExposureOf(config);
  if (exposure !== null) throw new Error(exposure);
  // MINK_TLS_CERT_FILE/MINK_TLS_KEY_FILE: read (and checked) before anything starts, so a bad file stops the
  // start with its name; both the HTTP API and the gRPC listener then speak TLS only.
  const tls = readTlsCredentials(config.tls);
  // Appends read their JSON bytes straight into Arrow (GatewayService.append).
  const app = await createService(GatewayModule.register(config, tls), { routeSecrets: config, rawJsonRoutes: new Set([APPEND_ROUTE]), https: tls });
  await startService(app);
}

main().catch((error) => {
  // eslint-disable-next-line no-console
  console.error(error);
  process.exit(1);
});
