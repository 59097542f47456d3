import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { ENV, type TlsFiles } from '@mink/config';

/** A TLS server's PEM certificate chain and private key, as read from their files. */
export interface TlsCredentials {
  cert: Buffer;
  key: Buffer;
}

/**
 * The certificate and key `files` name, or null for none; `variables` are the settings that name them (the
 * gateway's `MINK_TLS_CERT_FILE` and `MINK_TLS_KEY_FILE` unless told). A file that cannot be read, or a pair
 * that does not make a TLS context (not PEM, a key that does not match the certificate), throws an error naming
 * the variable and the file, so the service stops at start instead of serving in the clear or failing at each
 * handshake. The error never quotes the key.
 */
export function readTlsCredentials(files: TlsFiles | null, variables: { cert: string; key: string } = { cert: ENV.tlsCertFile, key: ENV.tlsKeyFile }): TlsCredentials | null {
  if (files === null) return null;
  const cert = readPem(variables.cert, files.certFile);
  const key = readPem(variables.key, files.keyFile);
  try {
    createSecureContext({ cert, key });
  } catch (error) {
    throw new Error(`${variables.cert} ${files.certFile} and ${variables.key} ${files.keyFile} do not make a TLS certificate and its key: ${(error as Error).message}`);
  }
  return { cert, key };
}

/** The bytes of the file at `path`, which the setting `variable` names; one that cannot be read throws, naming both. */
export function readPem(variable: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new Error(`${variable}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
}
