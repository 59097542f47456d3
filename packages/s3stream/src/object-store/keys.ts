import { InvalidArgumentError } from '@mink/protocol';

/** Object keys must be non-empty: an empty key would address the bucket itself. */
export function assertValidKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidArgumentError('an object key must be a non-empty string');
}

/**
 * Orders keys as S3 lists them: by their UTF-8 bytes. JavaScript's default string order compares UTF-16 code
 * units instead and differs for characters outside the Basic Multilingual Plane.
 */
export function compareKeys(left: string, right: string): number {
  return Buffer.compare(Buffer.from(left, 'utf8'), Buffer.from(right, 'utf8'));
}
