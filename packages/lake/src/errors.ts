import { ConflictError } from '@mink/protocol';

/**
 * A commit found the metadata version it was about to write already written: another writer, or an
 * earlier attempt of this one whose outcome was lost, committed on the same base. Nothing was written
 * over it. The caller loads the table again and adopts what the lake holds (its tiered offsets) instead
 * of writing the round twice. Code `Conflict`, so every wire maps it like any conflict.
 */
export class LakeCommitConflictError extends ConflictError {
  constructor(
    readonly tableName: string,
    /** The version that exists (the one the commit would have written). */
    readonly metadataVersion: number,
  ) {
    super(`lake table '${tableName}': metadata version ${metadataVersion} is already written; load the table again`);
    this.name = 'LakeCommitConflictError';
  }
}
