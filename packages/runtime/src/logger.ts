import pino, { type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs on stdout, one line per event, tagged with the process's role and id. */
export function createLogger(role: string, nodeId: string, level = 'info'): Logger {
  return pino({ level, base: { role, node: nodeId, pid: process.pid } });
}
