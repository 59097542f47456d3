import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { NatsServerTls } from './nats-server';
import { writeSecretFile } from './secrets';

const run = promisify(execFile);

/** What a generated TLS setup is for: the NATS servers' client port, or the data nodes' Kafka listeners. */
export type TlsListener = 'nats' | 'kafka';

/** The files of a generated TLS setup in a secrets folder: `<listener>-ca.pem`, its key, `<listener>-server.pem` and its key. */
export function tlsFilesOf(listener: TlsListener): { ca: string; caKey: string; cert: string; key: string } {
  return { ca: `${listener}-ca.pem`, caKey: `${listener}-ca-key.pem`, cert: `${listener}-server.pem`, key: `${listener}-server-key.pem` };
}

/** The files of the NATS servers' TLS, in the secrets folder of `mink up --secure` or of the compose stack. */
export const NATS_TLS_FILES = tlsFilesOf('nats');
/** The names the servers of `mink up --secure` are reached by: loopback only. */
export const LOCAL_CERTIFICATE_NAMES: readonly string[] = ['DNS:localhost', 'IP:127.0.0.1'];
/** How long the generated certificates are valid: a CA for ten years, the servers' certificate for two (renewed by deleting it). */
const CA_DAYS = 3650;
const CERTIFICATE_DAYS = 825;

/**
 * The CA of `listener`'s TLS in `folder` (tlsFilesOf: `<listener>-ca.pem` and its key, EC P-256, made with
 * openssl), made unless the folder holds it already. Its key is 0600. Nodes that issue their own certificate
 * at start (the compose stack's data nodes) are given this pair.
 */
export async function ensureCertificateAuthority(folder: string, listener: TlsListener): Promise<{ caFile: string; caKeyFile: string; created: boolean }> {
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  const files = tlsFilesOf(listener);
  const [caFile, caKeyFile] = [join(folder, files.ca), join(folder, files.caKey)];
  const created = !existsSync(caFile) || !existsSync(caKeyFile);
  if (created) {
    await openssl(['req', '-x509', ...EC_KEY, '-days', String(CA_DAYS), '-subj', `/CN=mink ${listener} CA`, '-keyout', caKeyFile, '-out', caFile]);
  }
  chmodSync(caKeyFile, 0o600);
  chmodSync(caFile, 0o644);
  return { caFile, caKeyFile, created };
}

/**
 * TLS for the servers of `listener` reached by `names` (subjectAltName entries, `DNS:nats-1`, `IP:127.0.0.1`): a
 * CA (ensureCertificateAuthority) and a server certificate signed by it (EC P-256, made with openssl) in `folder`
 * (tlsFilesOf), unless the folder holds them already (a deleted certificate is made again from the same CA, so
 * clients keep trusting it). Keys are 0600.
 */
export async function ensureServerTlsFiles(folder: string, listener: TlsListener, names: readonly string[]): Promise<NatsServerTls> {
  const file = (name: string): string => join(folder, name);
  const files = tlsFilesOf(listener);
  const [certFile, keyFile] = [file(files.cert), file(files.key)];
  const { caFile, caKeyFile: caKey, created } = await ensureCertificateAuthority(folder, listener);
  const tls = { caFile, certFile, keyFile };
  // A new CA signs a new certificate: the one there was signed by the CA it replaces.
  if (!created && existsSync(certFile) && existsSync(keyFile)) return tls;
  const request = file(`${listener}-server.csr`);
  const extensions = file(`${listener}-server.ext`);
  writeSecretFile(extensions, `subjectAltName=${names.join(',')}\n`);
  try {
    await openssl(['req', ...EC_KEY, '-subj', `/CN=${listener}`, '-keyout', keyFile, '-out', request]);
    await openssl(['x509', '-req', '-in', request, '-CA', caFile, '-CAkey', caKey, '-CAcreateserial', '-days', String(CERTIFICATE_DAYS), '-extfile', extensions, '-out', certFile]);
  } finally {
    for (const leftover of [request, extensions, file(`${listener}-ca.srl`)]) rmSync(leftover, { force: true });
  }
  chmodSync(keyFile, 0o600);
  chmodSync(certFile, 0o644);
  return tls;
}

/** A new EC P-256 key without a passphrase, as openssl req takes it. */
const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

async function openssl(args: string[]): Promise<void> {
  await run('openssl', args).catch((error: NodeJS.ErrnoException & { stderr?: string }) => {
    if (error.code === 'ENOENT') throw new Error('openssl is needed to make the TLS certificates: apt-get install openssl');
    throw new Error(`openssl ${args[0]} failed: ${(error.stderr ?? error.message).trim()}`);
  });
}
