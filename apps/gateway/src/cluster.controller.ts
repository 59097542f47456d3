import { Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { GatewayService } from './gateway.service';

/** Cluster state and rebalance (DESIGN §7). */
@Controller('v1/cluster')
export class ClusterController {
  constructor(private readonly gateway: GatewayService) {}

  @Get()
  status() {
    return this.gateway.clusterStatus();
  }

  @Post('rebalance')
  @HttpCode(200)
  rebalance(@Query('dryRun') dryRun?: string) {
    return this.gateway.rebalance(dryRun === 'true' || dryRun === '1' || dryRun === '');
  }
}
