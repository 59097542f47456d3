import { execFileSync } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { issueKafkaCertificate, issueServerCertificate, ISSUED_CERTIFICATE_DAYS } from './certificate-issuer';

/**
 * Certificates a node issues itself, checked with the real openssl (which made the CAs) and real TLS handshakes
 * of node:tls: a client trusting only the CA accepts the node under each of its names and no other.
 */
describe('issueServerCertificate', () => {
  let folder: string;
  const ca = (name: string, keyArgs: string[], days = 3650): { cert: Buffer; key: Buffer } => {
    const [cert, key] = [join(folder, `${name}.pem`), join(folder, `${name}-key.pem`)];
    execFileSync('openssl', ['req', '-x509', ...keyArgs, '-nodes', '-days', String(days), '-subj', `/CN=${name}`, '-keyout', key, '-out', cert], { stdio: 'ignore' });
    return { cert: readFileSync(cert), key: readFileSync(key) };
  };
  const ec256 = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'];

  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), 'mink-issuer-'));
  });
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it.each([
    ['EC P-256', ec256],
    ['EC P-384', ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:secp384r1']],
    ['RSA', ['-newkey', 'rsa:2048']],
  ])('issues a certificate openssl verifies against a %s CA, with the names asked for', async (label, keyArgs) => {
    const authority = ca(`ca-${label.replace(/\W/g, '')}`, keyArgs);
    const issued = await issueServerCertificate(authority.cert, authority.key, [{ type: 'ip', value: '172.18.0.5' }, { type: 'dns', value: 'data-node' }]);
    const chain = join(folder, `chain-${label.replace(/\W/g, '')}.pem`);
    writeFileSync(chain, issued.cert);
    const caFile = join(folder, `ca-${label.replace(/\W/g, '')}.pem`);
    expect(execFileSync('openssl', ['verify', '-CAfile', caFile, chain], { encoding: 'utf8' }).trim()).toBe(`${chain}: OK`);
    const leaf = new X509Certificate(issued.cert);
    expect(leaf.subjectAltName).toBe('IP Address:172.18.0.5, DNS:data-node');
    expect(leaf.ca).toBe(false);
    expect(leaf.checkPrivateKey(createPrivateKey(issued.key))).toBe(true);
    const days = (new Date(leaf.validTo).getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(ISSUED_CERTIFICATE_DAYS - 1);
    expect(days).toBeLessThanOrEqual(ISSUED_CERTIFICATE_DAYS);
  });

  it('never issues past the CA, and refuses a key that is not the CA’s or a CA that is not one', async () => {
    // Proves a misconfigured pair stops the start with a reason instead of serving a certificate no client accepts.
    const short = ca('short', ec256, 30);
    const issued = await issueServerCertificate(short.cert, short.key, [{ type: 'dns', value: 'x' }]);
    expect(issued.notAfter.getTime()).toBe(new Date(new X509Certificate(short.cert).validTo).getTime());
    const other = ca('other', ec256);
    await expect(issueServerCertificate(short.cert, other.key, [{ type: 'dns', value: 'x' }])).rejects.toThrow("not the CA certificate's key");
    const leaf = await issueServerCertificate(other.cert, other.key, [{ type: 'dns', value: 'x' }]);
    await expect(issueServerCertificate(leaf.cert, leaf.key, [{ type: 'dns', value: 'x' }])).rejects.toThrow('is not a CA');
    await expect(issueServerCertificate(other.cert, Buffer.from('not a key'), [{ type: 'dns', value: 'x' }])).rejects.toThrow('not a PEM private key');
  });

  it('serves TLS a client trusting only the CA accepts under the advertised address and the extra names, and refuses under any other name', async () => {
    const authority = ca('kafka-ca', ec256);
    const [caFile, caKeyFile] = [join(folder, 'kafka-ca.pem'), join(folder, 'kafka-ca-key.pem')];
    const issued = await issueKafkaCertificate({ caFile, caKeyFile, extraNames: ['data-node'] }, '127.0.0.1', 'a1b2c3d4e5f6');
    expect(issued.names.map((name) => name.value)).toEqual(['127.0.0.1', 'a1b2c3d4e5f6', 'data-node']);
    const server: Server = createServer({ cert: issued.cert, key: issued.key }, (socket) => socket.end('hello'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const handshake = (servername: string | undefined): Promise<string> =>
      new Promise((resolve) => {
        const socket = connect({ host: '127.0.0.1', port, ca: authority.cert, ...(servername ? { servername } : {}) }, () => socket.once('data', (data) => resolve(data.toString())));
        socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      });
    try {
      expect(await handshake(undefined)).toBe('hello');
      expect(await handshake('data-node')).toBe('hello');
      expect(await handshake('a1b2c3d4e5f6')).toBe('hello');
      expect(await handshake('elsewhere')).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('names the variables when the CA files cannot be read or the names are malformed', async () => {
    await expect(issueKafkaCertificate({ caFile: join(folder, 'missing.pem'), caKeyFile: 'x', extraNames: [] }, '10.0.0.1', 'h')).rejects.toThrow('MINK_KAFKA_TLS_CA_FILE: cannot read');
    ca('named', ec256);
    await expect(issueKafkaCertificate({ caFile: join(folder, 'named.pem'), caKeyFile: join(folder, 'named-key.pem'), extraNames: ['IP:nope'] }, '10.0.0.1', 'h')).rejects.toThrow('MINK_KAFKA_TLS_EXTRA_NAMES');
    await expect(issueKafkaCertificate({ caFile: join(folder, 'named.pem'), caKeyFile: join(folder, 'kafka-ca-key.pem'), extraNames: [] }, '10.0.0.1', 'h')).rejects.toThrow(/MINK_KAFKA_TLS_CA_FILE .* cannot issue .*not the CA certificate's key/);
  });
});
