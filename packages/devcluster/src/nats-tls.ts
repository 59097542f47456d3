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
 * TLS for the servers of `listener` reached by `names` (subjectAltName entries, `DNS:nats-1`, `IP:127.0.0.1`): a
 * CA and a server certificate signed by it (EC P-256, made with openssl) in `folder` (tlsFilesOf), unless the
 * folder holds them already (a deleted certificate is made again from the same CA, so clients keep trusting
 * it). Keys are 0600.
 */
export async function ensureServerTlsFiles(folder: string, listener: TlsListener, names: readonly string[]): Promise<NatsServerTls> {
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  const file = (name: string): string => join(folder, name);
  const files = tlsFilesOf(listener);
  const [caFile, caKey, certFile, keyFile] = [files.ca, files.caKey, files.cert, files.key].map(file) as [string, string, string, string];
  const tls = { caFile, certFile, keyFile };
  if ([caFile, caKey, certFile, keyFile].every((each) => existsSync(each))) return tls;
  const openssl = async (args: string[]): Promise<void> => {
    await run('openssl', args).catch((error: NodeJS.ErrnoException & { stderr?: string }) => {
      if (error.code === 'ENOENT') throw new Error("openssl is needed to make the NATS servers' TLS certificate: apt-get install openssl");
      throw new Error(`openssl ${args[0]} failed: ${(error.stderr ?? error.message).trim()}`);
    });
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  if (!existsSync(caFile) || !existsSync(caKey)) {
    await openssl(['req', '-x509', ...ec, '-days', String(CA_DAYS), '-subj', `/CN=mink ${listener} CA`, '-keyout', caKey, '-out', caFile]);
  }
  const request = file(`${listener}-server.csr`);
  const extensions = file(`${listener}-server.ext`);
  writeSecretFile(extensions, `subjectAltName=${names.join(',')}\n`);
  try {
    await openssl(['req', ...ec, '-subj', `/CN=${listener}`, '-keyout', keyFile, '-out', request]);
    await openssl(['x509', '-req', '-in', request, '-CA', caFile, '-CAkey', caKey, '-CAcreateserial', '-days', String(CERTIFICATE_DAYS), '-extfile', extensions, '-out', certFile]);
  } finally {
    for (const leftover of [request, extensions, file(`${listener}-ca.srl`)]) rmSync(leftover, { force: true });
  }
  for (const each of [caKey, keyFile]) chmodSync(each, 0o600);
  for (const each of [caFile, certFile]) chmodSync(each, 0o644);
  return tls;
}
