/** What a WAL writer knows when it decides whether to form its next object (its queue is not empty). */
export interface WalQueueState {
  /** The writer is closing: everything queued goes out. */
  closing: boolean;
  queuedBytes: number;
  /** Queued bytes that make a full object. */
  flushBytes: number;
  /** Objects uploading or waiting to commit (the caller only asks while fewer than its limit are). */
  inFlight: number;
  /** The oldest queued append has waited the linger. */
  lingerExpired: boolean;
  /** Appends were queued while no object was in flight, and the turn of the event loop they came in has ended. */
  idleTurnEnded: boolean;
}

/** Why the next object is formed now. */
export type WalObjectReason = 'closing' | 'full' | 'lingered' | 'idle';

/**
 * Whether the next WAL object goes out now, and why; null to wait. A full object goes out while any upload
 * place is free; a smaller one only when no object is in flight, once its oldest append has lingered or once
 * the turn in which appends came to an idle writer has ended. So under load appends gather into fewer,
 * larger objects while the previous one uploads and commits (each object costs every process of the cluster
 * one CommitWal to apply), and a lone request is not held back by a linger with nothing to gather behind.
 */
export function walObjectDue(state: WalQueueState): WalObjectReason | null {
  if (state.closing) return 'closing';
  if (state.queuedBytes >= state.flushBytes) return 'full';
  if (state.inFlight > 0) return null;
  if (state.lingerExpired) return 'lingered';
  if (state.idleTurnEnded) return 'idle';
  return null;
}
