import { ERROR_CODES } from '../wire/codes';
import { KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeSaslAuthenticateRequest, encodeSaslAuthenticateResponse } from './sasl-authenticate';
import { decodeSaslHandshakeRequest, encodeSaslHandshakeResponse } from './sasl-handshake';
import { bytesEncoder, kafkajsApi, prefixesNotRefused } from './kafka-oracle.fixture';

describe('SaslHandshake against kafkajs', () => {
  it('v1: decodes the mechanism kafkajs sends', async () => {
    const bytes = await kafkajsApi('saslHandshake').requestBytes(1, { mechanism: 'SCRAM-SHA-512' });
    expect(decodeSaslHandshakeRequest(new KafkaReader(bytes), 1)).toEqual({ mechanism: 'SCRAM-SHA-512' });
    expect(prefixesNotRefused(bytes, (reader) => decodeSaslHandshakeRequest(reader, 1))).toEqual([]);
  });

  it('v1: kafkajs reads the enabled mechanisms back', async () => {
    const body = bytesEncoder(encodeSaslHandshakeResponse)(1, { errorCode: ERROR_CODES.NONE, mechanisms: ['PLAIN', 'SCRAM-SHA-256'] });
    expect(await kafkajsApi('saslHandshake').response(1).decode(body)).toEqual({ errorCode: 0, enabledMechanisms: ['PLAIN', 'SCRAM-SHA-256'] });
  });

  it('refuses version 0 (bare SASL frames are not served)', () => {
    expect(() => decodeSaslHandshakeRequest(new KafkaReader(new KafkaWriter().string('PLAIN').toBytes()), 0)).toThrow();
  });
});

describe('SaslAuthenticate', () => {
  it.each([0, 1])('v%i: kafkajs reads back the error, message and bytes', async (version) => {
    const body = bytesEncoder(encodeSaslAuthenticateResponse)(version, { errorCode: ERROR_CODES.NONE, errorMessage: null, authBytes: Buffer.from('r=abc'), sessionLifetimeMs: 0 });
    const decoded = await kafkajsApi('saslAuthenticate').response(version).decode(body);
    expect(decoded.errorCode).toBe(0);
    // kafkajs hands the bytes on with their int32 size prefix, as its mechanisms expect.
    expect(Buffer.from(decoded.authBytes).subarray(4).toString()).toBe('r=abc');
  });

  it('v2 (flexible): compact bytes and tagged fields, laid out as the spec says', () => {
    const body = Buffer.from(bytesEncoder(encodeSaslAuthenticateResponse)(2, { errorCode: ERROR_CODES.SASL_AUTHENTICATION_FAILED, errorMessage: 'no', authBytes: Buffer.from('x'), sessionLifetimeMs: 0 }));
    const reader = new KafkaReader(body);
    expect([reader.int16(), reader.compactNullableString(), Buffer.from(reader.compactBytes()).toString(), Number(reader.int64())]).toEqual([58, 'no', 'x', 0]);
    reader.taggedFields();
    expect(reader.remaining).toBe(0);
  });

  it.each([0, 1, 2])('v%i: decodes the auth bytes, and refuses every truncation', (version) => {
    const writer = new KafkaWriter();
    if (version < 2) writer.bytes(Buffer.from('\u0000app\u0000secret'));
    else writer.compactBytes(Buffer.from('\u0000app\u0000secret')).taggedFields();
    const bytes = writer.toBytes();
    expect(Buffer.from(decodeSaslAuthenticateRequest(new KafkaReader(bytes), version).authBytes).toString()).toBe('\u0000app\u0000secret');
    expect(prefixesNotRefused(bytes, (reader) => decodeSaslAuthenticateRequest(reader, version))).toEqual([]);
  });
});
