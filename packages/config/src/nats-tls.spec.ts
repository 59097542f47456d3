import { natsTlsOptions, readServiceConfig } from './env';

describe('readServiceConfig: TLS of the NATS connections', () => {
  it.each([
    [{}, null],
    [{ MINK_NATS_TLS_CA_FILE: '' }, null],
    [{ MINK_NATS_TLS_CA_FILE: '/ca.pem' }, { caFile: '/ca.pem' }],
    [{ MINK_NATS_TLS_CERT_FILE: '/c.pem', MINK_NATS_TLS_KEY_FILE: '/k.pem' }, { certFile: '/c.pem', keyFile: '/k.pem' }],
    [{ MINK_NATS_TLS_CA_FILE: '/ca.pem', MINK_NATS_TLS_CERT_FILE: '/c.pem', MINK_NATS_TLS_KEY_FILE: '/k.pem' }, { caFile: '/ca.pem', certFile: '/c.pem', keyFile: '/k.pem' }],
  ])('reads %p as %p', (env, expected) => {
    // Proves a service speaks TLS to NATS exactly when one of the variables is set, with the files it names.
    expect(readServiceConfig(env).natsTls).toEqual(expected);
  });

  it.each([
    [{ MINK_NATS_TLS_CERT_FILE: '/c.pem' }, 'MINK_NATS_TLS_KEY_FILE is missing'],
    [{ MINK_NATS_TLS_CA_FILE: '/ca.pem', MINK_NATS_TLS_KEY_FILE: '/k.pem' }, 'MINK_NATS_TLS_CERT_FILE is missing'],
  ])('refuses half a client certificate %p, naming the missing variable', (env, message) => {
    // Proves a half-configured mutual TLS stops the start instead of connecting without the client certificate.
    expect(() => readServiceConfig(env)).toThrow(message);
  });

  it('gives nats.js its tls option for the files, and nothing without them', () => {
    expect(natsTlsOptions({ caFile: '/ca.pem' })).toEqual({ tls: { caFile: '/ca.pem' } });
    expect(natsTlsOptions(null)).toEqual({});
    expect(natsTlsOptions(undefined)).toEqual({});
  });
});

describe('readServiceConfig: TLS of the Kafka listener', () => {
  it.each([
    [{}, null, null],
    [{ MINK_KAFKA_TLS_CERT_FILE: '/c.pem', MINK_KAFKA_TLS_KEY_FILE: '/k.pem' }, { certFile: '/c.pem', keyFile: '/k.pem' }, null],
    [{ MINK_KAFKA_TLS_CA_FILE: '/ca.pem', MINK_KAFKA_TLS_CA_KEY_FILE: '/ca-key.pem' }, null, { caFile: '/ca.pem', caKeyFile: '/ca-key.pem', extraNames: [] }],
    [
      { MINK_KAFKA_TLS_CA_FILE: '/ca.pem', MINK_KAFKA_TLS_CA_KEY_FILE: '/ca-key.pem', MINK_KAFKA_TLS_EXTRA_NAMES: ' data-node, IP:10.0.0.9 ,' },
      null,
      { caFile: '/ca.pem', caKeyFile: '/ca-key.pem', extraNames: ['data-node', 'IP:10.0.0.9'] },
    ],
  ])('reads %p as the certificate %p or the issuer %p', (env, files, issuer) => {
    // Proves a data node serves the files it is given, or issues its own certificate with the CA it is given, never both.
    expect(readServiceConfig(env)).toMatchObject({ kafkaTls: files, kafkaTlsIssuer: issuer });
  });

  it.each([
    [{ MINK_KAFKA_TLS_CA_FILE: '/ca.pem' }, 'MINK_KAFKA_TLS_CA_KEY_FILE is missing'],
    [{ MINK_KAFKA_TLS_CERT_FILE: '/c.pem', MINK_KAFKA_TLS_KEY_FILE: '/k.pem', MINK_KAFKA_TLS_CA_FILE: '/ca.pem', MINK_KAFKA_TLS_CA_KEY_FILE: '/k' }, 'not both'],
    [{ MINK_KAFKA_TLS_EXTRA_NAMES: 'data-node' }, 'MINK_KAFKA_TLS_EXTRA_NAMES is set without MINK_KAFKA_TLS_CA_FILE'],
  ])('refuses %p, naming the variables', (env, message) => {
    expect(() => readServiceConfig(env)).toThrow(message);
  });
});
