import { Controller, Get, Header, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { SERVICE_STATE, ServiceState } from './service-state';

/** /healthz (the process answers), /readyz (it can serve) and /metrics (Prometheus text). */
@Controller()
export class HealthController {
  constructor(@Inject(SERVICE_STATE) private readonly state: ServiceState) {}

  @Get('healthz')
  healthz(): { status: string; role: string; node: string } {
    return { status: 'ok', role: this.state.role, node: this.state.nodeId };
  }

  @Get('readyz')
  readyz(@Res() reply: FastifyReply): void {
    const { ready, reason } = this.state.readiness();
    void reply.status(ready ? 200 : 503).send({ ready, reason });
  }

  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4')
  async metrics(): Promise<string> {
    return this.state.registry.metrics();
  }
}
