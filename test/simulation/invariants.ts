import { bucketId, ownRecord, type Command, type Outcome, type View } from '@mink/meta';

/** A broken invariant: names what broke; the seed and step are added by the runner. */
export class InvariantViolation extends Error {}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new InvariantViolation(message);
}

/**
 * Invariants over the metadata log as it is applied (an observer's own copy of the view, fed every entry
 * with the view before it): a stream is written by one node incarnation per stream epoch, and nothing a
 * deposed coordinator or a fenced node incarnation proposes takes effect.
 */
export class LogInvariants {
  /** Who committed to each stream epoch ("bucket@epoch" → "node#nodeEpoch"). */
  private readonly committers = new Map<string, string>();
  accepted = 0;

  observe(before: View, seq: number, command: Command, outcome: Outcome): void {
    if (!outcome.ok) return;
    this.accepted += 1;
    const where = `entry ${seq} (${command.type})`;
    if ('coordinatorEpoch' in command && typeof command.coordinatorEpoch === 'number') {
      check(
        command.coordinatorEpoch === before.coordinator.epoch,
        `${where}: accepted from coordinator epoch ${command.coordinatorEpoch} while the view's is ${before.coordinator.epoch} (a deposed coordinator changed something)`,
      );
    }
    if (command.type === 'CommitWal') {
      const node = ownRecord(before.nodes, command.nodeId);
      check(node !== undefined && node.epoch === command.nodeEpoch, `${where}: accepted from node ${command.nodeId} epoch ${command.nodeEpoch} while the view's is ${node?.epoch} (a fenced incarnation wrote)`);
      for (const range of command.ranges) {
        const stream = `${bucketId(range.tableId, range.partition, range.bucket)}@${range.streamEpoch}`;
        const committer = `${command.nodeId}#${command.nodeEpoch}`;
        const earlier = this.committers.get(stream);
        check(earlier === undefined || earlier === committer, `${where}: stream ${stream} committed by ${committer} after ${earlier} (two writers in one stream epoch)`);
        this.committers.set(stream, committer);
      }
    }
  }
}

/** One row the workload sent: unique id, its writer and the writer's call order. */
export interface SentRow {
  id: number;
  writer: string;
  seq: number;
}

/** A stored row as a scan returns it, with its bucket and offset. */
export interface StoredRow extends SentRow {
  bucket: number;
  offset: number;
}

/**
 * After the run: every acknowledged row is stored exactly once, no row is stored twice (acknowledged or
 * not: the writer sequence makes retries idempotent), nothing is stored that was never sent, and within a
 * bucket each writer's rows appear in the order it sent them.
 */
export function checkStoredRows(stored: StoredRow[], acknowledged: Map<number, SentRow>, unacknowledged: Map<number, SentRow>): void {
  const seen = new Map<number, StoredRow>();
  for (const row of stored) {
    const earlier = seen.get(row.id);
    check(earlier === undefined, `row ${row.id} stored twice: bucket ${row.bucket} offsets ${earlier?.offset} and ${row.offset}`);
    seen.set(row.id, row);
    const sent = acknowledged.get(row.id) ?? unacknowledged.get(row.id);
    check(sent !== undefined, `row ${row.id} stored at bucket ${row.bucket} offset ${row.offset} was never sent`);
    check(sent.writer === row.writer && sent.seq === row.seq, `row ${row.id} stored as ${row.writer}/${row.seq}, sent as ${sent.writer}/${sent.seq}`);
  }
  for (const row of acknowledged.values()) check(seen.has(row.id), `acknowledged row ${row.id} (writer ${row.writer}, call ${row.seq}) is not stored`);
  const lastSeq = new Map<string, StoredRow>();
  for (const row of [...stored].sort((a, b) => a.bucket - b.bucket || a.offset - b.offset)) {
    const key = `${row.bucket}/${row.writer}`;
    const previous = lastSeq.get(key);
    const state = (id: number) => (acknowledged.has(id) ? 'acknowledged' : 'not acknowledged');
    check(
      previous === undefined || previous.seq <= row.seq,
      `bucket ${row.bucket}: writer ${row.writer}'s call ${row.seq} (offset ${row.offset}, ${state(row.id)}) stored after its call ${previous?.seq} (offset ${previous?.offset}, ${state(previous?.id ?? -1)})`,
    );
    lastSeq.set(key, row);
  }
}

/**
 * After the run, for the PK table: no acknowledged put is lost or overwritten by an older one (each key
 * holds at least the newest version acknowledged for it), nothing is stored that was never sent (at most
 * the newest version sent), and a key never put is absent.
 */
export function checkStoredVersions(rows: (Record<string, unknown> | null)[], acknowledged: Map<number, number>, sent: Map<number, number>): void {
  rows.forEach((row, key) => {
    const newestSent = sent.get(key);
    if (newestSent === undefined) {
      check(row === null, `key ${key} was never put but holds ${JSON.stringify(row)}`);
      return;
    }
    const newestAcknowledged = acknowledged.get(key);
    if (row === null) {
      check(newestAcknowledged === undefined, `key ${key} is missing, though version ${newestAcknowledged} of it was acknowledged`);
      return;
    }
    const version = Number(row.v);
    check(version >= (newestAcknowledged ?? 0), `key ${key} holds version ${version}, older than the acknowledged version ${newestAcknowledged} (an acknowledged put lost)`);
    check(version <= newestSent, `key ${key} holds version ${version}, never sent (newest sent ${newestSent})`);
  });
}
