import { securityLineOf } from './security-line';

describe('securityLineOf', () => {
  it.each<[string, Parameters<typeof securityLineOf>[0], RegExp]>([
    ['an open cluster', {}, /^not secured: nothing asks for credentials/],
    ['--auth-tokens', { authTokens: '/etc/mink/tokens.json' }, /^partly secured: the gateway \(HTTP, gRPC\) and Kafka \(SASL\) ask for tokens of \/etc\/mink\/tokens\.json; .*no TLS/],
    ['--secure', { secure: true }, /^secured: NATS asks every process .* no TLS on the gateway/],
    ['--secure --tls-cert', { secure: true, tlsCert: '/c.pem' }, /^secured: .*; the gateway speaks TLS$/],
  ])('%s', (_, flags, line) => {
    expect(securityLineOf(flags)).toMatch(line);
  });
});
