import { Controller, Get, HttpCode, Post, Query, UseGuards } from '@nestjs/common';
import { GatewayService, readClusterQuery, readDryRun } from '@mink/http-api';
import { Access, AccessGuard } from './access.guard';

/** Cluster state and rebalance (docs/architecture.md §12). */
@Controller('v1/cluster')
@UseGuards(AccessGuard)
export class ClusterController {
  constructor(private readonly gateway: GatewayService) {}

  @Get()
  @Access('read')
  status(@Query('buckets') buckets?: string | string[], @Query('table') table?: string | string[]): ReturnType<GatewayService['clusterStatus']> {
    return this.gateway.clusterStatus(readClusterQuery(buckets, table));
  }

  @Post('rebalance')
  @HttpCode(200)
  @Access('admin')
  rebalance(@Query('dryRun') dryRun?: string | string[]): ReturnType<GatewayService['rebalance']> {
    return this.gateway.rebalance(readDryRun(dryRun));
  }
}
