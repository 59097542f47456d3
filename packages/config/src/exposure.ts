/**
 * The refusal of a gateway that would serve anyone beyond this machine: bound (HTTP or gRPC) to an address
 * other than loopback, with no tokens file, and not told outright that this is meant
 * (`MINK_ALLOW_UNAUTHENTICATED=true`). Null when it may start. Secure by default: a gateway on 0.0.0.0 with
 * no credentials is more often a mistake than a choice, so the choice has to be written down.
 */
export function unauthenticatedExposureOf(config: { httpBindHost: string; grpcBindHost: string; authTokensFile: string; allowUnauthenticated: boolean }): string | null {
  if (config.authTokensFile !== '' || config.allowUnauthenticated) return null;
  const exposed = [
    ['MINK_HTTP_BIND_HOST', config.httpBindHost],
    ['MINK_GRPC_BIND_HOST', config.grpcBindHost],
  ].filter(([, host]) => !isLoopback(host!));
  if (exposed.length === 0) return null;
  const where = exposed.map(([name, host]) => `${name}=${host}`).join(' and ');
  return `${where} serves the gateway beyond this machine without credentials: set MINK_AUTH_TOKENS_FILE (README "Authentication"), or MINK_ALLOW_UNAUTHENTICATED=true to serve anyone who can reach it`;
}

/** Whether a bind address is a loopback one (IPv4 127/8, IPv6 ::1, localhost). */
export function isLoopback(host: string): boolean {
  const normalized = host.toLowerCase().replace(/^\[|\]$/g, '');
  return normalized === 'localhost' || normalized === '::1' || /^127\.\d+\.\d+\.\d+$/.test(normalized);
}
