/**
 * The names of a lake table's metadata objects and of its version hint (see IcebergTable for the layout):
 * `lake/{table}/metadata/v{N}-{tag}.metadata.json`, where `tag` names the tiering round that wrote it
 * (`r{tieringEpoch}`), and `lake/{table}/metadata/version-hint.text` holding `{N}-{tag}`, so that a
 * file-system catalog reader, which opens `v{hint}.metadata.json`, opens exactly that file.
 *
 * These are free functions of the key alone, so the process that records a metadata key in the metadata
 * log can publish its hint without opening the table.
 */
import { InvalidArgumentError } from '@mink/protocol';
import { LAKE_LIMITS } from './lake-limits';
import { type LakeObjectStore, getOrNull } from './lake-store';

/** A mink table name as lake keys take it (the lake table is at `lake/{name}/`). */
const TABLE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const TAG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_]*$/;
const METADATA_KEY_PATTERN = /^lake\/([A-Za-z_][A-Za-z0-9_.-]*)\/metadata\/v([1-9][0-9]*)-([A-Za-z0-9][A-Za-z0-9_]*)\.metadata\.json$/;

/** A metadata key's parts. */
export interface LakeMetadataKeyParts {
  tableName: string;
  /** N: 1 for the table's first commit, then one more per commit on top of the previous. */
  version: number;
  /** The round that wrote it, e.g. `r42`. */
  tag: string;
}

/** Refuses a name that cannot be a lake table's folder. */
export function checkLakeTableName(tableName: string): void {
  if (!TABLE_NAME_PATTERN.test(tableName)) throw new InvalidArgumentError(`'${tableName}' is not a table name`);
}

/**
 * Refuses a commit tag that is not letters, digits and `_` (starting with a letter or digit), or longer
 * than LAKE_LIMITS.commitTagCharactersMax: it goes into object keys and the hint, which are split at `-`.
 */
export function checkCommitTag(tag: string): void {
  if (!TAG_PATTERN.test(tag) || tag.length > LAKE_LIMITS.commitTagCharactersMax) {
    throw new InvalidArgumentError(`'${tag}' is not a commit tag (letters, digits and _, at most ${LAKE_LIMITS.commitTagCharactersMax} characters)`);
  }
}

/** The key of version `version` of `tableName`'s metadata, written by the round `tag`. */
export function lakeMetadataKey(tableName: string, version: number, tag: string): string {
  checkLakeTableName(tableName);
  checkCommitTag(tag);
  if (!Number.isSafeInteger(version) || version < 1) throw new InvalidArgumentError(`${version} is not a metadata version`);
  return `lake/${tableName}/metadata/v${version}-${tag}.metadata.json`;
}

/** The parts of a metadata key; InvalidArgumentError for a key that is not one. */
export function parseLakeMetadataKey(metadataKey: string): LakeMetadataKeyParts {
  const match = METADATA_KEY_PATTERN.exec(metadataKey);
  const version = match === null ? NaN : Number(match[2]);
  if (match === null || !Number.isSafeInteger(version) || match[3]!.length > LAKE_LIMITS.commitTagCharactersMax) {
    throw new InvalidArgumentError(`'${metadataKey}' is not a lake metadata key (lake/{table}/metadata/v{N}-{tag}.metadata.json)`);
  }
  return { tableName: match[1]!, version, tag: match[3]! };
}

/** What an object under a lake table's folder is, by its key (see IcebergTable for the layout). */
export type LakeObjectKind = 'metadata' | 'hint' | 'manifest-list' | 'manifest' | 'data' | 'other';

/** A lake object's kind and the round tag its name carries (null for the hint and for keys of no known kind). */
export interface LakeObjectName {
  kind: LakeObjectKind;
  tag: string | null;
}

const TAG = '([A-Za-z0-9][A-Za-z0-9_]*)';
const UUID = '[0-9a-fA-F-]+';
const LAKE_OBJECT_PATTERNS: [Exclude<LakeObjectKind, 'hint' | 'other'>, RegExp][] = [
  ['metadata', new RegExp(`^metadata/v[1-9][0-9]*-${TAG}\\.metadata\\.json$`)],
  ['manifest-list', new RegExp(`^metadata/snap-[0-9]+-${TAG}-${UUID}\\.avro$`)],
  ['manifest', new RegExp(`^metadata/${TAG}-${UUID}-m[0-9]+\\.avro$`)],
  ['data', new RegExp(`^data/__bucket=[0-9]+/${TAG}-[0-9]+-[0-9]+-${UUID}\\.parquet$`)],
];

/**
 * The kind of the object `key` of lake table `tableName` and the tag of the round that wrote it, from its
 * name alone: `other` for a key this writer never names (a foreign file, or one under another table's
 * folder), which maintenance leaves alone. Tags longer than LAKE_LIMITS.commitTagCharactersMax are `other`.
 */
export function lakeObjectOf(tableName: string, key: string): LakeObjectName {
  const root = `lake/${tableName}/`;
  if (!key.startsWith(root)) return { kind: 'other', tag: null };
  if (key === lakeHintKey(tableName)) return { kind: 'hint', tag: null };
  const rest = key.slice(root.length);
  for (const [kind, pattern] of LAKE_OBJECT_PATTERNS) {
    const match = pattern.exec(rest);
    if (match !== null && match[1]!.length <= LAKE_LIMITS.commitTagCharactersMax) return { kind, tag: match[1]! };
  }
  return { kind: 'other', tag: null };
}

/** The key of `tableName`'s version hint. */
export function lakeHintKey(tableName: string): string {
  checkLakeTableName(tableName);
  return `lake/${tableName}/metadata/version-hint.text`;
}

/**
 * The metadata key `tableName`'s `version-hint.text` names, as a file-system catalog reader resolves it
 * (`metadata/v{hint}.metadata.json`), or null when there is no hint. InvalidArgumentError when the hint
 * names no metadata key. For tools and tests: mink finds the current metadata through its view.
 */
export async function readLakeHint(store: LakeObjectStore, tableName: string): Promise<string | null> {
  const bytes = await getOrNull(store, lakeHintKey(tableName));
  if (bytes === null) return null;
  const key = `lake/${tableName}/metadata/v${Buffer.from(bytes).toString('utf8').trim()}.metadata.json`;
  if (parseLakeMetadataKey(key).tableName !== tableName) throw new InvalidArgumentError(`the hint of '${tableName}' names ${key}`);
  return key;
}

/**
 * Writes the version hint of the table `metadataKey` belongs to, naming it (text `{N}-{tag}`), for readers
 * that find the table through its folder. Call it only once the metadata log recorded the key: the hint
 * must never name a round the log refused. A hint already naming version N or later is left as it is
 * (resolves false), so a slow caller never moves readers back to an older round; a hint naming no metadata
 * key is overwritten. The read before the write leaves a narrow race between two publishers, whose only
 * cost is a hint one round behind until the next round publishes. A lost hint is harmless.
 */
/**
 * The tag of a tiering round's objects: the mink table's id and the round's tiering epoch (`t{id}r{epoch}`),
 * so a table dropped and created again under the same name never meets its predecessor's names.
 */
export function roundTag(tableId: number, tieringEpoch: number): string {
  return `t${tableId}r${tieringEpoch}`;
}

/** The table id a round tag names, or null for a tag that is not a round's. */
export function tableIdOfTag(tag: string): number | null {
  const match = /^t(\d+)r\d+$/.exec(tag);
  return match ? Number(match[1]) : null;
}

export async function publishLakeHint(store: LakeObjectStore, metadataKey: string): Promise<boolean> {
  const { tableName, version, tag } = parseLakeMetadataKey(metadataKey);
  let hinted: string | null;
  try {
    hinted = await readLakeHint(store, tableName);
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    hinted = null;
  }
  // A newer version of the same table stays; a hint left by a dropped table of the same name is replaced.
  if (hinted !== null) {
    const current = parseLakeMetadataKey(hinted);
    if (current.version >= version && tableIdOfTag(current.tag) === tableIdOfTag(tag)) return false;
  }
  await store.put(lakeHintKey(tableName), Buffer.from(`${version}-${tag}`, 'utf8'));
  return true;
}
