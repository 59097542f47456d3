import { X509Certificate, createPrivateKey, createPublicKey, randomBytes, webcrypto, type KeyObject } from 'node:crypto';
import type * as X509 from '@peculiar/x509';
import { ENV, type KafkaTlsIssuer } from '@mink/config';
import { subjectAltNamesOf, type SubjectAltName } from './certificate-names';
import { readPem, type TlsCredentials } from './tls-credentials';

/** How long a certificate a node issues itself is valid (the longest a public CA may issue; a node issues a new one at every start). */
export const ISSUED_CERTIFICATE_DAYS = 397;
/** How far back an issued certificate is valid from, so a client whose clock is a little behind accepts it. */
const CLOCK_SKEW_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

/** A server certificate a node issued itself: its PEM chain (the certificate, then the CA) and key, its names and when it expires. */
export interface IssuedCertificate extends TlsCredentials {
  names: SubjectAltName[];
  notAfter: Date;
}

/**
 * Issues a TLS server certificate for `names`, signed by the CA of `caCertPem` with its private key `caKeyPem`
 * (PEM, EC P-256/P-384 or RSA), with a new EC P-256 key of its own: valid from an hour ago for
 * ISSUED_CERTIFICATE_DAYS, never past the CA. A key that is not the CA's, or a certificate that is not a CA,
 * throws; the error never quotes the key.
 */
export async function issueServerCertificate(caCertPem: Buffer, caKeyPem: Buffer, names: readonly SubjectAltName[], now = new Date()): Promise<IssuedCertificate> {
  const ca = new X509Certificate(caCertPem);
  if (!ca.ca) throw new Error(`the certificate of ${ca.subject.replace(/\n/g, ', ')} is not a CA`);
  let caKey: KeyObject;
  try {
    caKey = createPrivateKey(caKeyPem);
  } catch {
    throw new Error('the CA key is not a PEM private key');
  }
  const spki = (key: KeyObject): Buffer => key.export({ type: 'spki', format: 'der' });
  if (!spki(createPublicKey(caKey)).equals(spki(ca.publicKey))) throw new Error("the CA key is not the CA certificate's key");
  const x509 = await loadX509();
  const signing = signingAlgorithmOf(caKey);
  const signingKey = await webcrypto.subtle.importKey('pkcs8', caKey.export({ type: 'pkcs8', format: 'der' }), signing, false, ['sign']);
  const leaf = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(leaf, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const notAfter = new Date(Math.min(now.getTime() + ISSUED_CERTIFICATE_DAYS * DAY_MS, new Date(ca.validTo).getTime()));
  const certificate = await x509.X509CertificateGenerator.create({
    // A positive serial of 16 random bytes (RFC 5280: at most 20 octets, unpredictable).
    serialNumber: `01${randomBytes(15).toString('hex')}`,
    subject: `CN=${names[0]!.value}`,
    issuer: new x509.X509Certificate(caCertPem.toString('utf8')).subject,
    notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
    notAfter,
    signingAlgorithm: signing,
    publicKey: keys.publicKey,
    signingKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(names.map((name) => ({ type: name.type, value: name.value }))),
    ],
  });
  const key = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${key.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n?$/, '\n')}-----END PRIVATE KEY-----\n`;
  const chain = `${certificate.toString('pem').trim()}\n${caCertPem.toString('utf8').trim()}\n`;
  return { cert: Buffer.from(chain), key: Buffer.from(keyPem), names: [...names], notAfter };
}

/**
 * @peculiar/x509, loaded on the first certificate issued: it costs a process about 15 MiB and 150 ms to load,
 * which only a node that issues pays. It needs the Reflect metadata polyfill (tsyringe), set up before it loads.
 */
async function loadX509(): Promise<typeof X509> {
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  return x509;
}

/** The Web Crypto algorithm that signs with `key`: ECDSA with the hash of its curve, or RSASSA-PKCS1-v1_5 with SHA-256. */
function signingAlgorithmOf(key: KeyObject): (webcrypto.EcKeyImportParams & webcrypto.EcdsaParams) | webcrypto.RsaHashedImportParams {
  if (key.asymmetricKeyType === 'rsa') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  const curve = key.asymmetricKeyDetails?.namedCurve;
  if (key.asymmetricKeyType === 'ec' && curve === 'prime256v1') return { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  if (key.asymmetricKeyType === 'ec' && curve === 'secp384r1') return { name: 'ECDSA', namedCurve: 'P-384', hash: 'SHA-384' };
  throw new Error(`the CA key is ${key.asymmetricKeyType}${curve ? ` ${curve}` : ''}: EC P-256, EC P-384 or RSA is needed`);
}

/**
 * The Kafka listener's certificate a data node issues itself at start with `issuer` (MINK_KAFKA_TLS_CA_FILE and
 * MINK_KAFKA_TLS_CA_KEY_FILE), for its advertised host, its hostname and the extra names. A file that cannot be
 * read or a pair that cannot issue stops the start, naming the variables.
 */
export async function issueKafkaCertificate(issuer: KafkaTlsIssuer, advertisedHost: string, hostname: string): Promise<IssuedCertificate> {
  const caCert = readPem(ENV.kafkaTlsCaFile, issuer.caFile);
  const caKey = readPem(ENV.kafkaTlsCaKeyFile, issuer.caKeyFile);
  let names: SubjectAltName[];
  try {
    names = subjectAltNamesOf(advertisedHost, hostname, issuer.extraNames);
  } catch (error) {
    throw new Error(`${ENV.kafkaTlsExtraNames} or ${ENV.advertisedHost}: ${(error as Error).message}`);
  }
  try {
    return await issueServerCertificate(caCert, caKey, names);
  } catch (error) {
    throw new Error(`${ENV.kafkaTlsCaFile} ${issuer.caFile} and ${ENV.kafkaTlsCaKeyFile} ${issuer.caKeyFile} cannot issue the Kafka listener's certificate: ${(error as Error).message}`);
  }
}
