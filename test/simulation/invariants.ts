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

/** What a workload sent to one key of the PK table: its put and delete versions, and the newest acknowledged. */
export interface KeyHistory {
  puts: Set<number>;
  deletes: number[];
  acknowledged?: { version: number; kind: 'put' | 'delete' };
}

/**
 * Checks the stored row of every key of the PK table (`rows[key]`, null when none) against what was sent:
 * a key never written holds nothing; a stored row is a version that was put; and the state is at least as
 * new as the newest acknowledged write: a row's version is not below it (above it when that write was a
 * delete), and a missing row needs an acknowledged delete there or a delete sent after it (an acknowledged
 * put lost otherwise).
 */
export function checkStoredKeys(rows: (Record<string, unknown> | null)[], history: ReadonlyMap<number, KeyHistory>): void {
  rows.forEach((row, key) => {
    const sent = history.get(key);
    if (sent === undefined) {
      check(row === null, `key ${key} was never written but holds ${JSON.stringify(row)}`);
      return;
    }
    const acknowledged = sent.acknowledged;
    if (row === null) {
      if (acknowledged === undefined || acknowledged.kind === 'delete') return;
      check(
        sent.deletes.some((version) => version > acknowledged.version),
        `key ${key} is missing, though version ${acknowledged.version} of it was put and acknowledged and no later delete was sent`,
      );
      return;
    }
    const version = Number(row.v);
    check(sent.puts.has(version), `key ${key} holds version ${version}, which was never put`);
    if (acknowledged === undefined) return;
    if (acknowledged.kind === 'put') {
      check(version >= acknowledged.version, `key ${key} holds version ${version}, older than the acknowledged put of version ${acknowledged.version} (an acknowledged put lost)`);
    } else {
      check(version > acknowledged.version, `key ${key} holds version ${version}, though a later delete (version ${acknowledged.version}) was acknowledged`);
    }
  });
}
