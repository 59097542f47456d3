import { Readable } from 'node:stream';
import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Patch, Post, Query, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { GatewayService } from '@mink/http-api';
import { Access, AccessGuard } from './access.guard';

/** Table administration and data (docs/architecture.md §12). Each method is one service call. */
/** The route pattern of appends, whose bodies reach the handler as bytes (`rawJsonRoutes` of the HTTP adapter). */
export const APPEND_ROUTE = '/v1/tables/:name/append';

/** What a route answers: the result of its GatewayService call, as is (named here for the app's declarations). */
type Answer<Call extends keyof GatewayService> = ReturnType<GatewayService[Call]>;

@Controller('v1/tables')
@UseGuards(AccessGuard)
export class TablesController {
  constructor(private readonly gateway: GatewayService) {}

  @Post()
  @HttpCode(201)
  @Access('admin', { bodyField: 'name' })
  create(@Body() body: unknown): Answer<'createTable'> {
    return this.gateway.createTable(body);
  }

  @Get()
  @Access('read')
  list(): Answer<'listTables'> {
    return this.gateway.listTables();
  }

  @Get(':name')
  @Access('read', { param: 'name' })
  describe(@Param('name') name: string): Answer<'describeTable'> {
    return this.gateway.describeTable(name);
  }

  @Patch(':name')
  @Access('admin', { param: 'name' })
  alter(@Param('name') name: string, @Body() body: unknown): Answer<'alterTable'> {
    return this.gateway.alterTable(name, body);
  }

  @Delete(':name')
  @Access('admin', { param: 'name' })
  drop(@Param('name') name: string): Answer<'dropTable'> {
    return this.gateway.dropTable(name);
  }

  @Post(':name/append')
  @HttpCode(200)
  @Access('write', { param: 'name' })
  append(@Param('name') name: string, @Body() body: unknown): Answer<'append'> {
    return this.gateway.append(name, body);
  }

  @Post(':name/put')
  @HttpCode(200)
  @Access('write', { param: 'name' })
  put(@Param('name') name: string, @Body() body: unknown): Answer<'put'> {
    return this.gateway.put(name, body);
  }

  @Post(':name/delete')
  @HttpCode(200)
  @Access('write', { param: 'name' })
  delete(@Param('name') name: string, @Body() body: unknown): Answer<'delete'> {
    return this.gateway.delete(name, body);
  }

  @Post(':name/lookup')
  @HttpCode(200)
  @Access('read', { param: 'name' })
  lookup(@Param('name') name: string, @Body() body: unknown): Answer<'lookup'> {
    return this.gateway.lookup(name, body);
  }

  /** An addition to docs/architecture.md §12: `{prefixes:[…], columns?, limit?}` → `{results:[{rows, truncated}, …]}` in prefix order. */
  @Post(':name/prefix-lookup')
  @HttpCode(200)
  @Access('read', { param: 'name' })
  prefixLookup(@Param('name') name: string, @Body() body: unknown): Answer<'prefixLookup'> {
    return this.gateway.prefixLookup(name, body);
  }

  /** JSON, NDJSON or Arrow by the Accept header; a scan larger than one page is streamed (chunked). */
  @Get(':name/scan')
  @Access('read', { param: 'name' })
  async scan(@Param('name') name: string, @Query() query: Record<string, string | undefined>, @Headers('accept') accept: string | undefined, @Res() reply: FastifyReply) {
    const answer = await this.gateway.scan(name, query, accept);
    const body = typeof answer.body === 'string' || answer.body instanceof Uint8Array ? answer.body : Readable.from(answer.body);
    await reply.status(200).headers(answer.headers).type(answer.contentType).send(body);
  }
}
