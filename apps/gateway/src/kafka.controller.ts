import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { GatewayService, readGroupParameter } from '@mink/http-api';
import { Access, AccessGuard } from './access.guard';

/** What the gateway tells of the Kafka side of the cluster (docs/kafka.md). */
@Controller('v1/kafka')
@UseGuards(AccessGuard)
export class KafkaController {
  constructor(private readonly gateway: GatewayService) {}

  /** Consumer groups with their committed offsets and lag per partition; names every group, so a read token for all tables. */
  @Get('groups')
  @Access('read')
  groups(@Query('group') group?: string | string[]): ReturnType<GatewayService['kafkaGroups']> {
    return this.gateway.kafkaGroups(readGroupParameter(group));
  }
}
