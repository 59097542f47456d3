import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { ENV } from '@mink/config';
import { CliError } from './io';

/**
 * A `fetch` for https URLs that trusts `ca` (PEM) besides the system's certificate authorities: what the
 * `mink` commands use when `MINK_TLS_CA_FILE` names the CA of a gateway's certificate (a self-signed one,
 * say). Node's own fetch takes no CA per request, and `NODE_EXTRA_CA_CERTS` is read only at process start.
 * It covers what GatewayClient needs: a method, string headers, a string body, an abort signal; the answer
 * is read whole. Failures look like fetch's: a TypeError whose `cause` is the socket error (its `code`), or
 * the signal's reason when aborted.
 */
export function fetchTrustingCa(ca: Buffer): typeof fetch {
  return (input, init = {}) =>
    new Promise<Response>((resolveResponse, reject) => {
      const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
      if (url.protocol !== 'https:') return reject(new TypeError('fetch failed', { cause: { code: 'ERR_NOT_HTTPS', message: `${ENV.tlsCaFile} is given but ${url.origin} is not https` } }));
      const signal = init.signal ?? undefined;
      if (signal?.aborted) return reject(signal.reason);
      const headers = Object.fromEntries(new Headers(init.headers).entries());
      const request = httpsRequest(url, { method: init.method ?? 'GET', headers, ca: [ca], agent: false }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', (error) => reject(new TypeError('fetch failed', { cause: error })));
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          const answerHeaders = new Headers();
          for (const [name, value] of Object.entries(response.headers)) {
            for (const each of Array.isArray(value) ? value : value === undefined ? [] : [value]) answerHeaders.append(name, each);
          }
          // A Response of these statuses may not have a body.
          const body = status === 204 || status === 304 ? null : Buffer.concat(chunks);
          resolveResponse(new Response(body, { status, statusText: response.statusMessage ?? '', headers: answerHeaders }));
        });
      });
      const onAbort = (): void => {
        request.destroy();
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      request.on('close', () => signal?.removeEventListener('abort', onAbort));
      request.on('error', (error) => reject(new TypeError('fetch failed', { cause: error })));
      if (typeof init.body === 'string') request.write(init.body);
      request.end();
    });
}

/** The fetch of the `mink` commands: `fallback` (the global fetch), or one trusting the CA in `MINK_TLS_CA_FILE` when that is set. */
export function gatewayFetch(env: NodeJS.ProcessEnv, fallback: typeof fetch): typeof fetch {
  const path = env[ENV.tlsCaFile];
  if (path === undefined || path === '') return fallback;
  let ca: Buffer;
  try {
    ca = readFileSync(path);
  } catch (error) {
    throw new CliError(`${ENV.tlsCaFile}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  return fetchTrustingCa(ca);
}
