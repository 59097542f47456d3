import { Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { GatewayService } from './gateway.service';
import { readDryRun } from './request-bodies';

/** Cluster state and rebalance (docs/architecture.md §12). */
@Controller('v1/cluster')
export class ClusterController {
  constructor(private readonly gateway: GatewayService) {}

  @Get()
  status() {
    return this.gateway.clusterStatus();
  }

  @Post('rebalance')
  @HttpCode(200)
  rebalance(@Query('dryRun') dryRun?: string | string[]) {
    return this.gateway.rebalance(readDryRun(dryRun));
  }
}
