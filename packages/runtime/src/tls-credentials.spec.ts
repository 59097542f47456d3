import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readTlsCredentials } from './tls-credentials';

describe('readTlsCredentials: the gateway certificate and key files', () => {
  let folder: string;

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'mink-tls-'));
  });

  afterEach(() => {
    rmSync(folder, { recursive: true, force: true });
  });

  it('is null without files: the gateway then speaks plain text', () => {
    expect(readTlsCredentials(null)).toBeNull();
  });

  it.each([
    ['cert', 'MINK_TLS_CERT_FILE: cannot read'],
    ['key', 'MINK_TLS_KEY_FILE: cannot read'],
  ])('stops on a missing %s file, naming the variable and the file', (missing, message) => {
    // Proves a wrong path stops the start with the file's name instead of serving in the clear.
    const certFile = join(folder, 'cert.pem');
    const keyFile = join(folder, 'key.pem');
    writeFileSync(missing === 'cert' ? keyFile : certFile, 'x');
    const absent = missing === 'cert' ? certFile : keyFile;
    expect(() => readTlsCredentials({ certFile, keyFile })).toThrow(`${message} ${absent} (ENOENT)`);
  });

  it('names the settings it is told: a data node reads its Kafka listener\'s pair the same way', () => {
    const certFile = join(folder, 'kafka-cert.pem');
    const keyFile = join(folder, 'kafka-key.pem');
    writeFileSync(keyFile, 'x');
    expect(() => readTlsCredentials({ certFile, keyFile }, { cert: 'MINK_KAFKA_TLS_CERT_FILE', key: 'MINK_KAFKA_TLS_KEY_FILE' })).toThrow(`MINK_KAFKA_TLS_CERT_FILE: cannot read ${certFile} (ENOENT)`);
    writeFileSync(certFile, 'not a certificate');
    expect(() => readTlsCredentials({ certFile, keyFile }, { cert: 'MINK_KAFKA_TLS_CERT_FILE', key: 'MINK_KAFKA_TLS_KEY_FILE' })).toThrow(
      `MINK_KAFKA_TLS_CERT_FILE ${certFile} and MINK_KAFKA_TLS_KEY_FILE ${keyFile} do not make a TLS certificate and its key`,
    );
  });

  it('stops on files that are not a PEM certificate and key, naming both files and quoting neither', () => {
    const certFile = join(folder, 'cert.pem');
    const keyFile = join(folder, 'key.pem');
    writeFileSync(certFile, 'not a certificate');
    writeFileSync(keyFile, 'secret-key-material-0123');
    let message = '';
    try {
      readTlsCredentials({ certFile, keyFile });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(`MINK_TLS_CERT_FILE ${certFile} and MINK_TLS_KEY_FILE ${keyFile} do not make a TLS certificate and its key`);
    expect(message).not.toContain('secret-key-material-0123');
  });
});
