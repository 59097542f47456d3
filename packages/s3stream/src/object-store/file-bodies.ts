import { stat } from 'node:fs/promises';
import { InvalidArgumentError } from '@mink/protocol';
import { OBJECT_PUT_BYTES_MAX } from './object-store';

/**
 * The length of the local file `putFile` is about to upload, refusing what one PutObject cannot carry. Every
 * adapter calls it before sending anything, so a too-large file fails the same way in the fake and on S3.
 */
export async function sizeOfFileToPut(path: string): Promise<number> {
  const stats = await stat(path);
  if (!stats.isFile()) throw new InvalidArgumentError(`putFile: '${path}' is not a regular file`);
  if (stats.size > OBJECT_PUT_BYTES_MAX) {
    throw new InvalidArgumentError(
      `putFile: '${path}' holds ${stats.size} bytes, more than the ${OBJECT_PUT_BYTES_MAX} bytes (5 GiB) one PutObject may carry; ` +
        'multipart uploads are not supported',
    );
  }
  return stats.size;
}
