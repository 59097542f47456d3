/**
 * What a metadata log tail does about an entry its own process appended (the append was acked, so the log
 * holds it) once `LIMITS.metaTailAppendedEntryWaitMs` have passed since it looked last.
 *
 * A JetStream pull consumer can stop delivering while the client still counts its pull as pending:
 * nats-server before 2.9.15 drops a pull request that expires just as a message arrives for it without
 * sending the `408 Request Timeout` that tells the client (nats-io/nats-server#3942), and nats.js 2.29 then
 * pulls again only after two idle heartbeats are missed. Every proposal of the process waits for its own
 * entry to apply, so such a stall stops its appends and commits for that long; seen on Debian's
 * nats-server 2.9.10 as two-second pauses of every acknowledgement of a data node under load.
 *
 * - `delivered`: the tail has passed the entry; nothing to watch.
 * - `replace`: a consumer is running and nothing at all arrived since the last look: it does not deliver,
 *   whatever the reason, so the tail starts another from its next entry (entries delivered twice are skipped).
 * - `wait`: entries are arriving (the tail is behind, not stuck), or no consumer runs yet (one is being
 *   created, which counts as progress once it starts): look again after another wait.
 */
export type AppendedEntryAction = 'delivered' | 'replace' | 'wait';

export interface AppendedEntryState {
  /** The newest sequence this process appended. */
  appendedSeq: number;
  /** The next sequence the tail will deliver. */
  expectedSeq: number;
  /** Whether a consumer is delivering to the tail now (created and consuming). */
  consuming: boolean;
  /** Whether the tail took an entry or started a consumer since the last look. */
  progressedSinceLastLook: boolean;
}

export function appendedEntryAction(state: AppendedEntryState): AppendedEntryAction {
  if (state.appendedSeq < state.expectedSeq) return 'delivered';
  if (state.consuming && !state.progressedSinceLastLook) return 'replace';
  return 'wait';
}
