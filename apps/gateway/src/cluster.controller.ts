import { Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { GatewayService, readDryRun } from '@mink/http-api';

/** Cluster state and rebalance (docs/architecture.md §12). */
@Controller('v1/cluster')
export class ClusterController {
  constructor(private readonly gateway: GatewayService) {}

  @Get()
  status(): ReturnType<GatewayService['clusterStatus']> {
    return this.gateway.clusterStatus();
  }

  @Post('rebalance')
  @HttpCode(200)
  rebalance(@Query('dryRun') dryRun?: string | string[]): ReturnType<GatewayService['rebalance']> {
    return this.gateway.rebalance(readDryRun(dryRun));
  }
}
