import { ConflictError, InvalidArgumentError } from '@mink/protocol';

/**
 * A commit found the metadata object it was about to write already written: the same round (the same
 * tag on the same base version) committed before, in an earlier attempt whose outcome was lost. Nothing
 * was written over it. Rounds racing from one base use different tags and never meet here; a round that is
 * retried must get a new tag (a new tiering epoch), or adopt the earlier attempt's metadata if the log
 * recorded it. Code `Conflict`, so every wire maps it like any conflict.
 */
export class LakeCommitConflictError extends ConflictError {
  constructor(
    readonly tableName: string,
    /** The metadata object that exists (the one the commit would have written). */
    readonly metadataKey: string,
  ) {
    super(`lake table '${tableName}': ${metadataKey} is already written; commit the round under a new tag`);
    this.name = 'LakeCommitConflictError';
  }
}

/**
 * One bucket of a primary-key table is too large for a tiering round to merge within the bounds of
 * LAKE_LIMITS (`pkBucketStateBytesMax`, `pkBucketKeysMax`): the round stops before it writes the bucket's
 * file and commits nothing. Code `InvalidArgument`, as the table, not the round, would have to change
 * (more buckets); retrying the round meets the same bound.
 */
export class LakeBucketTooLargeError extends InvalidArgumentError {
  constructor(
    readonly tableName: string,
    readonly bucket: number,
    /** What went over: `bytes` of merged state or live `keys`. */
    readonly measure: 'bytes' | 'keys',
    readonly amount: number,
    readonly limit: number,
  ) {
    super(
      `bucket ${bucket} of '${tableName}' holds ${measure === 'bytes' ? `${amount} bytes of merged state` : `${amount} live keys`} while tiering, ` +
        `more than the ${limit} a round merges in memory (LAKE_LIMITS.${measure === 'bytes' ? 'pkBucketStateBytesMax' : 'pkBucketKeysMax'}): give the table more buckets`,
    );
    this.name = 'LakeBucketTooLargeError';
  }
}
