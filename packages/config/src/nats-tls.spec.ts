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
