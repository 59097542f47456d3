import 'reflect-metadata';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { parseAccessPolicy, type GatewayService } from '@mink/http-api';
import { readConsoleFiles } from './console.controller';
import { startGatewayOver } from './gateway-app.fixture';

/**
 * The web console's files over the real Nest/Fastify stack of a gateway that asks for tokens: the page and
 * every file it names are served without a token, with their content type and a Content-Security-Policy;
 * nothing else is (no other name, no path out of the console's folders), and the API stays guarded. Needs
 * the console built (`pnpm run build`): it serves the real files.
 */

const POLICY = parseAccessPolicy(JSON.stringify({ tokens: [{ name: 'ops', token: 'admin-token-000000001', scopes: ['admin'] }] }), 'tokens.json');

describe('gateway web console files', () => {
  let app: NestFastifyApplication;
  const service = { clusterStatus: async () => ({ coordinator: { node: null, epoch: 0 }, nodes: [], buckets: [] }) } as unknown as GatewayService;

  beforeAll(async () => {
    app = await startGatewayOver(service, { policy: POLICY });
  });
  afterAll(async () => {
    await app.close();
  });

  const get = (url: string) => app.getHttpAdapter().getInstance().inject({ method: 'GET', url });

  it('serves the page without a token, and every script and stylesheet it names', async () => {
    for (const url of ['/console', '/console/']) {
      const page = await get(url);
      expect([url, page.statusCode, page.headers['content-type']]).toEqual([url, 200, 'text/html; charset=utf-8']);
      expect(page.headers['content-security-policy']).toContain("default-src 'self'");
      expect(page.body).toContain('<title>mink console</title>');
    }
    const html = (await get('/console')).body;
    const named = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(named.sort()).toEqual(['/console/console.css', '/console/page.js']);
    // page.js imports the derivations module beside it.
    const script = await get('/console/page.js');
    expect(script.body).toContain("from './figures.js'");
    for (const url of [...named, '/console/figures.js']) {
      const file = await get(url);
      expect([url, file.statusCode]).toEqual([url, 200]);
      expect(file.headers['content-type']).toBe(url.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8');
    }
  });

  it('serves no other name, and no path out of its folders', async () => {
    for (const url of ['/console/nothing.js', '/console/figures.d.ts', '/console/.tsbuildinfo', '/console/..%2Fpackage.json', '/console/%2E%2E%2F%2E%2E%2Fpackage.json', '/console/static%2Findex.html', '/console/static/index.html', '/console/dist/page.js']) {
      const answer = await get(url);
      expect([url, answer.statusCode, answer.json().error.code]).toEqual([url, 404, 'NotFound']);
    }
  });

  it('keeps the API it calls guarded', async () => {
    expect((await get('/v1/cluster')).statusCode).toBe(401);
  });

  it('refuses to serve a console that was not built, naming the folder', () => {
    const folder = mkdtempSync(join(tmpdir(), 'mink-console-'));
    try {
      mkdirSync(join(folder, 'static'));
      mkdirSync(join(folder, 'dist'));
      writeFileSync(join(folder, 'static', 'index.html'), '<!doctype html>');
      expect(() => readConsoleFiles(folder)).toThrow(`the console in ${folder} is not built`);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
