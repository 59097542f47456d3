/**
 * The one line `mink up` prints on what the cluster asks for, so nobody takes an open cluster for a secured
 * one: `--secure` (NATS identities, bearer tokens on the gateway and SASL on Kafka, the cluster secret on the
 * data nodes' internal routes, a token on /metrics), `--auth-tokens` alone (the gateway and Kafka only), or
 * nothing (loopback only).
 */
export function securityLineOf(flags: { secure?: boolean; authTokens?: string; tlsCert?: string }): string {
  const tls = flags.tlsCert ? 'the gateway speaks TLS' : 'no TLS on the gateway (--tls-cert)';
  if (flags.secure) {
    return `secured: NATS asks every process for its credentials over TLS, the gateway (HTTP, gRPC) and Kafka (SASL over TLS) for tokens, the data nodes' internal routes for the cluster secret, /metrics for its token; ${tls}`;
  }
  if (flags.authTokens) return `partly secured: the gateway (HTTP, gRPC) and Kafka (SASL) ask for tokens of ${flags.authTokens}; NATS, the internal routes and /metrics ask for nothing (--secure); ${tls}`;
  return 'not secured: nothing asks for credentials (every service listens on loopback only); --secure turns authentication on';
}
