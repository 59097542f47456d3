import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A record as kcat prints it with `-f '%p|%o|%k|%s|%h\n'`. */
export interface ConsumedRecord {
  partition: number;
  offset: number;
  key: string;
  value: string;
  headers: string;
}

/**
 * Every record of one partition from the beginning, read by librdkafka (kcat) until the end of the partition:
 * read_committed, librdkafka's default (aborted transactions skipped, stopping at an open one), or
 * read_uncommitted (every record stored).
 */
export async function kcatConsume(broker: string, topic: string, partition: number, options: { readUncommitted?: boolean } = {}): Promise<ConsumedRecord[]> {
  const isolation = options.readUncommitted ? ['-X', 'isolation.level=read_uncommitted'] : [];
  const { stdout } = await run('kcat', ['-b', broker, ...isolation, '-C', '-t', topic, '-p', String(partition), '-o', 'beginning', '-e', '-q', '-f', '%p|%o|%k|%s|%h\\n'], {
    timeout: 60_000,
    maxBuffer: 256 * 1024 * 1024,
  });
  return stdout
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => {
      const [p, o, key, value, headers] = line.split('|');
      return { partition: Number(p), offset: Number(o), key: key!, value: value!, headers: headers! };
    });
}
