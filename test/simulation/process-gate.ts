/**
 * What the simulation does to one process: it runs, it is paused (SIGSTOP: its work stalls at its next
 * message or I/O and goes on, late, on resume), or it is dead (kill -9: its I/O never completes and
 * messages to it are lost). Every port of a simulated process passes through its gate before and after
 * each call, so a process acts only while running, whatever its timers decide meanwhile.
 */
export type ProcessState = 'running' | 'paused' | 'dead';

export class ProcessGate {
  private current: ProcessState = 'running';
  private readonly waiting: (() => void)[] = [];
  private readonly onResume: (() => void)[] = [];

  constructor(readonly name: string) {}

  get state(): ProcessState {
    return this.current;
  }

  get running(): boolean {
    return this.current === 'running';
  }

  /** Resolves once the process runs; never for a dead one. */
  pass(): Promise<void> {
    if (this.current === 'running') return Promise.resolve();
    if (this.current === 'dead') return new Promise<void>(() => undefined);
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Calls `listener` every time the process resumes from a pause. */
  whenResumed(listener: () => void): void {
    this.onResume.push(listener);
  }

  pause(): void {
    if (this.current === 'running') this.current = 'paused';
  }

  resume(): void {
    if (this.current !== 'paused') return;
    this.current = 'running';
    for (const resolve of this.waiting.splice(0)) resolve();
    for (const listener of this.onResume) listener();
  }

  kill(): void {
    this.current = 'dead';
    this.waiting.splice(0);
    this.onResume.splice(0);
  }
}

/** Runs `call` as the process behind `gate` would: only while it runs, its result reaching it only while it runs. */
export async function gated<T>(gate: ProcessGate, call: () => Promise<T>): Promise<T> {
  await gate.pass();
  try {
    const result = await call();
    await gate.pass();
    return result;
  } catch (error) {
    await gate.pass();
    throw error;
  }
}

/**
 * Deliveries to a process (log entries, watch updates, messages) in order: at once while it runs, held
 * while it is paused and delivered on resume, dropped once it is dead.
 */
export class GatedDeliveries<T> {
  private readonly held: T[] = [];

  constructor(
    private readonly gate: ProcessGate,
    private readonly deliver: (item: T) => void,
  ) {
    gate.whenResumed(() => {
      for (const item of this.held.splice(0)) this.deliver(item);
    });
  }

  push(item: T): void {
    if (this.gate.state === 'dead') return;
    if (this.gate.state === 'paused' || this.held.length > 0) {
      this.held.push(item);
      return;
    }
    this.deliver(item);
  }
}
