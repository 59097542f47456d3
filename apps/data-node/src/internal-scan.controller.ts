import { Body, Controller, Inject, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { INTERNAL_SCAN_PATH, SCAN_PAGE_CONTENT_TYPE, scanPageHeadersOf } from '@mink/protocol';
import { InternalScans } from '@mink/data-plane';

/**
 * The internal scan route of a data node (see INTERNAL_SCAN_PATH in @mink/protocol), on the HTTP server
 * of its health and metrics. Errors go through the service's HttpErrorFilter, the HTTP mapping of every
 * typed error, so the caller rebuilds the same error as over NATS. With a cluster secret
 * (`MINK_CLUSTER_SECRET_FILE`) a request reaches this controller only with it: the service's route guard
 * (`guardRoutes` in @mink/runtime) answers any other 401 before the body is read.
 */
@Controller()
export class InternalScanController {
  constructor(@Inject(InternalScans) private readonly scans: InternalScans) {}

  @Post(INTERNAL_SCAN_PATH)
  async scan(@Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    const page = await this.scans.page(body);
    // The page's parts go to the socket as they are (one writev), not joined into one buffer first.
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { 'content-type': SCAN_PAGE_CONTENT_TYPE, 'content-length': page.byteLength, ...scanPageHeadersOf(page.metadata) });
    raw.cork();
    for (const part of page.parts) raw.write(part);
    raw.end();
  }
}
