/** Which epoch fenced a request. */
export type EpochKind = 'node' | 'coordinator' | 'leader' | 'stream';

/**
 * An expected outcome: the request carried an epoch older than the current one, so whoever sent it has
 * been replaced. The stable wire code is `Fenced`.
 */
export class FencedError extends Error {
  override readonly name = 'FencedError';
  readonly code = 'Fenced' as const;

  constructor(
    readonly epochKind: EpochKind,
    readonly presentedEpoch: number,
    readonly currentEpoch: number,
    message?: string,
  ) {
    super(message ?? `${epochKind} epoch ${presentedEpoch} is fenced: current epoch is ${currentEpoch}`);
  }
}
