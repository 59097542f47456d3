/**
 * Admission of coordinator actions that add work to the metadata plane (table creates and drops). Every
 * process applies every log entry, so the coordinator must not let the log run ahead of the processes that
 * apply it: a burst of creates is admitted only while few actions are in flight and the slowest live data
 * node is not far behind the log. Refused actions are answered `Unavailable` with a `Retry-After`, which
 * clients (the mink client, HTTP callers) honour by retrying later, instead of queueing without bound.
 */
export interface AdmissionInput {
  /** Actions admitted and not finished yet. */
  inFlight: number;
  inFlightMax: number;
  /** The last sequence of the metadata log this coordinator has applied. */
  appliedSeq: number;
  /** The applied sequence of each live data node (from its heartbeats). */
  memberAppliedSeqs: readonly number[];
  /** How many entries the slowest live data node may be behind `appliedSeq` before actions are refused. */
  memberLagEntriesMax: number;
  /** The Retry-After of a refusal. */
  retryAfterMs: number;
}

export type AdmissionDecision = { admit: true } | { admit: false; reason: string; retryAfterMs: number };

export function decideAdmission(input: AdmissionInput): AdmissionDecision {
  if (input.inFlight >= input.inFlightMax) {
    return { admit: false, reason: `${input.inFlight} coordinator actions are in flight (at most ${input.inFlightMax})`, retryAfterMs: input.retryAfterMs };
  }
  const slowest = input.memberAppliedSeqs.length === 0 ? input.appliedSeq : Math.min(...input.memberAppliedSeqs);
  const lag = input.appliedSeq - slowest;
  if (lag > input.memberLagEntriesMax) {
    return {
      admit: false,
      reason: `a data node is ${lag} metadata log entries behind (at most ${input.memberLagEntriesMax} before new actions wait)`,
      retryAfterMs: input.retryAfterMs,
    };
  }
  return { admit: true };
}
