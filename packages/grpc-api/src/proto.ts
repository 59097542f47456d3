import { join } from 'node:path';
import { loadSync, type Options, type PackageDefinition } from '@grpc/proto-loader';

/**
 * The folder of the .proto files: `proto/` of this package, found from both `src/` (Jest) and `dist/`
 * (the built gateway), which sit side by side under the package root.
 */
export const PROTO_ROOT = join(__dirname, '..', 'proto');

/** The mink API and the standard health service, relative to PROTO_ROOT. */
export const PROTO_FILES = ['mink/v1/mink.proto', 'grpc/health/v1/health.proto'] as const;

export const MINK_SERVICE = 'mink.v1.Mink';
export const HEALTH_SERVICE = 'grpc.health.v1.Health';

/**
 * How messages look in JavaScript, on the server and in the tests' clients alike: camelCase fields, uint64 as
 * decimal strings (exact beyond 2^53), enums by name, every absent field at its proto3 default except
 * `optional` ones, which stay undefined.
 */
export const PROTO_OPTIONS: Options = { keepCase: false, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [PROTO_ROOT] };

/** The definitions of every service the gateway serves, as its handlers and the tests' clients see the messages (reflection: loadReflectedProtos). */
export function loadGatewayProtos(): PackageDefinition {
  return loadSync([...PROTO_FILES], PROTO_OPTIONS);
}

/**
 * The same files as reflection describes them to clients (grpcurl, generated stubs): with the field names of
 * the .proto (`end_offset`, not the `endOffset` of PROTO_OPTIONS, which proto-loader also writes into the
 * descriptors it builds), so that a client built by reflection has the fields, names and numbers of mink.proto.
 */
export function loadReflectedProtos(): PackageDefinition {
  return loadSync([...PROTO_FILES], { ...PROTO_OPTIONS, keepCase: true });
}
