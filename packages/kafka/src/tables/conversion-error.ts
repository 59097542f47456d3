/**
 * Why a stored batch could not be presented in the other format (see record-batch-of-stored-rows.ts and
 * stored-rows-of-record-batch.ts). The codes are stable; callers map them onto their wire in one place:
 *
 * - `CorruptRecordBatch`: the Kafka record batch is not well formed (bad CRC, truncated records, a
 *   compressed section its codec cannot read).
 * - `UnsupportedRecordBatch`: a well-formed batch that has no rows to give: a control batch, a legacy
 *   message set (magic 0 or 1), offset deltas that are not 0..n-1, a zstd frame that needs a dictionary.
 * - `RecordBatchTooLarge`: the batch would decompress to more than the bound the caller allows.
 * - `CorruptStoredRows`: an Arrow payload that is not a batch of the table as described (wrong columns
 *   or types, no append times, a PK changelog without change types, no rows).
 */
export type RecordBatchConversionErrorCode = 'CorruptRecordBatch' | 'UnsupportedRecordBatch' | 'RecordBatchTooLarge' | 'CorruptStoredRows';

export class RecordBatchConversionError extends Error {
  constructor(
    readonly code: RecordBatchConversionErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RecordBatchConversionError';
  }
}

/** The message of anything thrown, for wrapping it (errors of another realm, such as node:zlib's under Jest, included). */
export function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(error);
}
