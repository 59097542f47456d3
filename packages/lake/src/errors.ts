import { ConflictError } from '@mink/protocol';

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
