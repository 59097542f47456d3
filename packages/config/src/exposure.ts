import { ENV } from './env';

/** A listener of a service: the variable that binds it, the address it binds, and the credential that guards it (set or not). */
interface Listener {
  variable: string;
  host: string;
  /** The setting that makes it ask for credentials. */
  credential: string;
  guarded: boolean;
}

/**
 * The refusal of a service that would serve anyone beyond this machine: a listener bound to an address other
 * than loopback without the credential that guards it, and not told outright that this is meant
 * (`MINK_ALLOW_UNAUTHENTICATED=true`). Null when it may start. Secure by default: a service on 0.0.0.0 with
 * no credentials is more often a mistake than a choice, so the choice has to be written down.
 */
function exposureOf(service: string, listeners: readonly Listener[], allowUnauthenticated: boolean): string | null {
  if (allowUnauthenticated) return null;
  const exposed = listeners.filter((listener) => !listener.guarded && !isLoopback(listener.host));
  if (exposed.length === 0) return null;
  const where = exposed.map((listener) => `${listener.variable}=${listener.host}`).join(' and ');
  const credentials = [...new Set(exposed.map((listener) => listener.credential))].join(' and ');
  return `${where} serves the ${service} beyond this machine without credentials: set ${credentials} (docs/operations.md "Authentication"), or ${ENV.allowUnauthenticated}=true to serve anyone who can reach it`;
}

/** The gateway's refusal (see exposureOf): its HTTP and gRPC APIs beyond loopback without a tokens file. */
export function unauthenticatedExposureOf(config: { httpBindHost: string; grpcBindHost: string; authTokensFile: string; allowUnauthenticated: boolean }): string | null {
  const guarded = config.authTokensFile !== '';
  return exposureOf(
    'gateway',
    [
      { variable: ENV.httpBindHost, host: config.httpBindHost, credential: ENV.authTokensFile, guarded },
      { variable: ENV.grpcBindHost, host: config.grpcBindHost, credential: ENV.authTokensFile, guarded },
    ],
    config.allowUnauthenticated,
  );
}

/**
 * A data node's refusal (see exposureOf): its Kafka listener beyond loopback without a tokens file (SASL), or
 * its HTTP server (the internal scans read any table) beyond loopback without a cluster secret.
 */
export function dataNodeExposureOf(config: { httpBindHost: string; kafkaBindHost: string; authTokensFile: string; clusterSecret: unknown; allowUnauthenticated: boolean }): string | null {
  return exposureOf(
    'data node',
    [
      { variable: ENV.kafkaBindHost, host: config.kafkaBindHost, credential: ENV.authTokensFile, guarded: config.authTokensFile !== '' },
      { variable: ENV.httpBindHost, host: config.httpBindHost, credential: ENV.clusterSecretFile, guarded: config.clusterSecret !== null },
    ],
    config.allowUnauthenticated,
  );
}

/** Whether a bind address is a loopback one (IPv4 127/8, IPv6 ::1, localhost). */
export function isLoopback(host: string): boolean {
  const normalized = host.toLowerCase().replace(/^\[|\]$/g, '');
  return normalized === 'localhost' || normalized === '::1' || /^127\.\d+\.\d+\.\d+$/.test(normalized);
}
