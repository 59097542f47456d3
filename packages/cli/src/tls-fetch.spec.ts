import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliError } from './io';
import { fetchTrustingCa, gatewayFetch } from './tls-fetch';

/**
 * The fetch of `mink` commands against an https gateway with a self-signed certificate (made here with the
 * openssl command): trusting MINK_TLS_CA_FILE it gets the answer, as fetch would; Node's own fetch refuses it.
 */
describe('fetchTrustingCa against a real HTTPS server with a self-signed certificate', () => {
  let folder: string;
  let server: Server;
  let url: string;
  let ca: Buffer;
  const seen: { method?: string; authorization?: string; body?: string }[] = [];

  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'mink-tls-fetch-'));
    const certFile = join(folder, 'cert.pem');
    const keyFile = join(folder, 'key.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=mink-test', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyFile, '-out', certFile], { stdio: 'ignore' });
    ca = readFileSync(certFile);
    server = createServer({ cert: ca, key: readFileSync(keyFile) }, (request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        seen.push({ method: request.method, authorization: request.headers.authorization, body });
        if (request.url === '/empty') return void response.writeHead(204).end();
        response.writeHead(request.url === '/missing' ? 404 : 200, { 'content-type': 'application/json', 'mink-next-offset': '7' });
        response.end(JSON.stringify({ path: request.url }));
      });
    });
    await new Promise<void>((resolveListen) => server.listen(0, '127.0.0.1', resolveListen));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolveClose) => server.close(resolveClose));
    rmSync(folder, { recursive: true, force: true });
  });

  it('sends the method, headers and body, and answers status, headers and text like fetch', async () => {
    const response = await fetchTrustingCa(ca)(`${url}/v1/tables`, { method: 'POST', headers: { authorization: 'Bearer t0ken', 'content-type': 'application/json' }, body: '{"a":1}' });
    expect([response.status, response.ok, response.headers.get('mink-next-offset'), await response.text()]).toEqual([200, true, '7', '{"path":"/v1/tables"}']);
    expect(seen.at(-1)).toEqual({ method: 'POST', authorization: 'Bearer t0ken', body: '{"a":1}' });
    const missing = await fetchTrustingCa(ca)(`${url}/missing`);
    expect([missing.status, missing.ok]).toEqual([404, false]);
    expect((await fetchTrustingCa(ca)(`${url}/empty`)).status).toBe(204);
  });

  it('fails like fetch without the CA: Node fetch refuses the self-signed certificate, and so does a CA that did not sign it', async () => {
    // Proves the test server is really untrusted by default, so the success above is the CA's doing.
    const plain = await fetch(`${url}/v1/tables`).catch((error: Error) => (error.cause as { code?: string }).code);
    expect(plain).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
    const otherCa = execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=other', '-keyout', join(folder, 'other.key')]);
    const wrong = await fetchTrustingCa(otherCa)(`${url}/v1/tables`).catch((error: TypeError) => [error.message, (error.cause as { code?: string }).code]);
    expect(wrong).toEqual(['fetch failed', 'DEPTH_ZERO_SELF_SIGNED_CERT']);
  });

  it('rejects with the signal reason when aborted, as fetch does', async () => {
    const reason = await fetchTrustingCa(ca)(`${url}/v1/tables`, { signal: AbortSignal.abort(new Error('gave up')) }).catch((error: Error) => error.message);
    expect(reason).toBe('gave up');
  });

  it('is used only when MINK_TLS_CA_FILE is set, and a file it cannot read is a CliError naming it', () => {
    const fallback = (async () => new Response(null)) as typeof fetch;
    expect(gatewayFetch({}, fallback)).toBe(fallback);
    expect(gatewayFetch({ MINK_TLS_CA_FILE: '' }, fallback)).toBe(fallback);
    expect(gatewayFetch({ MINK_TLS_CA_FILE: join(folder, 'cert.pem') }, fallback)).not.toBe(fallback);
    expect(() => gatewayFetch({ MINK_TLS_CA_FILE: join(folder, 'absent.pem') }, fallback)).toThrow(new CliError(`MINK_TLS_CA_FILE: cannot read ${join(folder, 'absent.pem')} (ENOENT)`));
  });
});
