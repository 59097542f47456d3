import { readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { Controller, Get, NotFoundException, Param, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';

/** Content types of the files the console is made of, by file ending; a file with another ending is not served. */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/**
 * The page loads only its own files and calls only this origin's API; nothing inline runs. A table name
 * that slipped past the page's escaping still could not load or run a script.
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  // A new build is seen at the next load; the files are small.
  'cache-control': 'no-cache',
};

interface ConsoleFile {
  contentType: string;
  bytes: Buffer;
}

/**
 * The files of @mink/console by the name the page asks for: its static HTML and CSS, and the browser
 * modules its build writes to dist/. Read once, at the first request (a gateway whose console was not
 * built still serves the API), and only these names are ever served, so no path reaches the disk.
 */
export function readConsoleFiles(packageDirectory: string): Map<string, ConsoleFile> {
  const files = new Map<string, ConsoleFile>();
  for (const folder of [join(packageDirectory, 'static'), join(packageDirectory, 'dist')]) {
    for (const name of readdirSync(folder)) {
      const contentType = CONTENT_TYPES[extname(name)];
      if (contentType !== undefined) files.set(name, { contentType, bytes: readFileSync(join(folder, name)) });
    }
  }
  if (!files.has('index.html') || !files.has('page.js')) throw new Error(`the console in ${packageDirectory} is not built (no index.html or page.js): run pnpm run build`);
  return files;
}

/** The web console (docs/console.md): open to anyone who reaches the gateway, since it holds no data; its calls to the API carry the user's token. */
@Controller('console')
export class ConsoleController {
  private files: Map<string, ConsoleFile> | null = null;

  @Get()
  page(@Res() reply: FastifyReply): void {
    this.send(reply, 'index.html');
  }

  /** Any path below /console, `/console/` (an empty name) included; only the names of its files are answered. */
  @Get('*')
  file(@Param('*') name: string, @Res() reply: FastifyReply): void {
    this.send(reply, name === '' ? 'index.html' : name);
  }

  private send(reply: FastifyReply, name: string): void {
    this.files ??= readConsoleFiles(dirname(require.resolve('@mink/console/package.json')));
    const file = this.files.get(name);
    if (file === undefined) throw new NotFoundException(`the console has no file '${name.slice(0, 100)}'`);
    void reply.headers({ ...SECURITY_HEADERS, 'content-type': file.contentType }).send(file.bytes);
  }
}
