import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * What the health endpoints report about one process: whether it is ready to serve, and its
 * Prometheus registry. A process is alive as long as it answers at all; ready only once it has caught
 * up with the metadata log and finished its own start (registration, lease, …).
 */
export class ServiceState {
  readonly registry = new Registry();
  private readyReason = 'starting';
  private ready = false;

  constructor(
    readonly role: string,
    readonly nodeId: string,
  ) {
    this.registry.setDefaultLabels({ role, node: nodeId });
    collectDefaultMetrics({ register: this.registry });
  }

  setReady(ready: boolean, reason = ready ? 'ready' : 'not ready'): void {
    this.ready = ready;
    this.readyReason = reason;
  }

  readiness(): { ready: boolean; reason: string } {
    return { ready: this.ready, reason: this.readyReason };
  }
}

export const SERVICE_STATE = Symbol('ServiceState');
