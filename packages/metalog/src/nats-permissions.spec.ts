import { DEFAULTS } from '@mink/config';
import { HEARTBEAT_BUCKET, LEASE_BUCKET, MINK_KV_BUCKETS, SNAPSHOT_BUCKET, COORDINATOR_LEASE_KEY, heartbeatKey, metaLogSubject } from './index';
import { SUBJECTS } from '@mink/protocol';
import { CLIENT_INBOX_PREFIX, NATS_IDENTITIES, metaLogSubjectOf, natsPermissionsOf, type NatsIdentity } from '@mink/devcluster';

/**
 * Whether a nats-server allow list lets a client publish to (or subscribe with) `subject`: some pattern
 * covers it, token by token, `*` one token and `>` the rest. A subscription with wildcards is allowed only
 * when every subject it could match is (`_INBOX.>` is not covered by `_INBOX.client.>`), as nats-server checks.
 */
function allows(patterns: readonly string[], subject: string): boolean {
  return patterns.some((pattern) => covers(pattern.split('.'), subject.split('.')));
}

function covers(pattern: string[], subject: string[]): boolean {
  for (let index = 0; index < pattern.length; index++) {
    const token = pattern[index]!;
    if (token === '>') return index < subject.length;
    const wanted = subject[index];
    if (wanted === undefined) return false;
    if (token === '*') {
      if (wanted === '>') return false;
      continue;
    }
    if (token !== wanted) return false;
  }
  return pattern.length === subject.length;
}

const META = DEFAULTS.metaStream;
const LOG = metaLogSubject(META);
const NODE_1 = SUBJECTS.nodeRpc(SUBJECTS.nodeAddress('1'));

/** [identity, publish or subscribe, subject, allowed]: what each identity may do, the refusals first in mind. */
const CASES: [NatsIdentity, 'publish' | 'subscribe', string, boolean][] = [
  // The outside clients: coordinator and data node requests, replies on their own inbox, and nothing else.
  ['client', 'publish', SUBJECTS.coordinatorRpc, true],
  ['client', 'publish', SUBJECTS.anyNodeRpc, true],
  ['client', 'publish', NODE_1, true],
  ['client', 'publish', LOG, false],
  ['client', 'publish', `$JS.API.STREAM.DELETE.${META}`, false],
  ['client', 'publish', `$JS.API.STREAM.PURGE.${META}`, false],
  ['client', 'publish', `$JS.API.STREAM.CREATE.${META}`, false],
  ['client', 'publish', `$JS.API.CONSUMER.CREATE.${META}`, false],
  ['client', 'publish', '$JS.API.INFO', false],
  ['client', 'publish', `$KV.${HEARTBEAT_BUCKET}.${heartbeatKey('data-node', '1')}`, false],
  ['client', 'publish', SUBJECTS.coordinatorDirect('coordinator-1'), false],
  ['client', 'publish', '_INBOX.abc.1', false],
  ['client', 'subscribe', `${CLIENT_INBOX_PREFIX}.abc.*`, true],
  ['client', 'subscribe', '_INBOX.abc.*', false],
  ['client', 'subscribe', '_INBOX.>', false],
  ['client', 'subscribe', '>', false],
  ['client', 'subscribe', NODE_1, false],
  ['client', 'subscribe', SUBJECTS.anyNodeRpc, false],
  ['client', 'subscribe', SUBJECTS.coordinatorRpc, false],
  // The gateway reads the log but never writes it, and serves no NATS subject.
  ['gateway', 'publish', LOG, false],
  ['gateway', 'publish', `$JS.API.STREAM.PURGE.${META}`, false],
  ['gateway', 'publish', `$JS.API.CONSUMER.CREATE.${META}.mink_tail_1.${LOG}`, true],
  ['gateway', 'publish', `$JS.API.CONSUMER.MSG.NEXT.${META}.mink_tail_1`, true],
  // An entry that arrived damaged is read again by its sequence; the client reads no log entry.
  ['gateway', 'publish', `$JS.API.STREAM.MSG.GET.${META}`, true],
  ['data-node', 'publish', `$JS.API.STREAM.MSG.GET.${META}`, true],
  ['client', 'publish', `$JS.API.STREAM.MSG.GET.${META}`, false],
  ['gateway', 'publish', NODE_1, true],
  ['gateway', 'publish', '_INBOX.abc.1', true],
  ['gateway', 'subscribe', NODE_1, false],
  ['gateway', 'subscribe', SUBJECTS.coordinatorRpc, false],
  ['gateway', 'publish', `$KV.${HEARTBEAT_BUCKET}.${heartbeatKey('data-node', '1')}`, false],
  // The tiering worker commits its rounds to the log, and calls the coordinator only.
  ['tiering-worker', 'publish', LOG, true],
  ['tiering-worker', 'publish', `$JS.API.STREAM.PURGE.${META}`, false],
  ['tiering-worker', 'publish', SUBJECTS.coordinatorRpc, true],
  ['tiering-worker', 'publish', NODE_1, false],
  ['tiering-worker', 'publish', `$KV.${LEASE_BUCKET}.${COORDINATOR_LEASE_KEY}`, false],
  // Data nodes append (WAL commits, opens), heartbeat as data nodes only, and serve node requests.
  ['data-node', 'publish', LOG, true],
  ['data-node', 'publish', `$KV.${HEARTBEAT_BUCKET}.${heartbeatKey('data-node', '7')}`, true],
  ['data-node', 'publish', `$KV.${HEARTBEAT_BUCKET}.${heartbeatKey('coordinator', 'coordinator-1')}`, false],
  ['data-node', 'publish', `$KV.${HEARTBEAT_BUCKET}.clock`, true],
  ['data-node', 'publish', `$KV.${LEASE_BUCKET}.${COORDINATOR_LEASE_KEY}`, false],
  ['data-node', 'publish', `$KV.${SNAPSHOT_BUCKET}.${META}`, false],
  ['data-node', 'publish', `$JS.API.STREAM.PURGE.${META}`, false],
  ['data-node', 'subscribe', NODE_1, true],
  ['data-node', 'subscribe', SUBJECTS.anyNodeRpc, true],
  ['data-node', 'subscribe', SUBJECTS.coordinatorRpc, false],
  // Coordinators hold the lease, write snapshots of the view and purge the log below them.
  ['coordinator', 'publish', LOG, true],
  ['coordinator', 'publish', `$JS.API.STREAM.PURGE.${META}`, true],
  ['coordinator', 'publish', `$KV.${LEASE_BUCKET}.${COORDINATOR_LEASE_KEY}`, true],
  ['coordinator', 'publish', `$KV.${SNAPSHOT_BUCKET}.${META}`, true],
  ['coordinator', 'publish', SUBJECTS.coordinatorDirect('coordinator-2'), true],
  ['coordinator', 'publish', `$KV.${HEARTBEAT_BUCKET}.${heartbeatKey('data-node', '1')}`, false],
  ['coordinator', 'subscribe', SUBJECTS.coordinatorRpc, true],
  ['coordinator', 'subscribe', SUBJECTS.coordinatorDirect('coordinator-1'), true],
  ['coordinator', 'subscribe', NODE_1, false],
  // The local cluster's own checks: JetStream answers, and how a stream stands; nothing of mink's traffic.
  ['admin', 'publish', '$JS.API.INFO', true],
  ['admin', 'publish', `$JS.API.STREAM.INFO.${META}`, true],
  ['admin', 'publish', LOG, false],
  ['admin', 'publish', SUBJECTS.coordinatorRpc, false],
  ['admin', 'publish', `$JS.API.STREAM.PURGE.${META}`, false],
];

describe('natsPermissionsOf', () => {
  it.each(CASES)('%s may %s %s: %p', (identity, action, subject, allowed) => {
    // Proves each identity gets what its role does and is refused the rest, the metadata log above all.
    expect(allows(natsPermissionsOf(identity)[action], subject)).toBe(allowed);
  });

  it.each(NATS_IDENTITIES.map((identity) => [identity]))('never lets %s delete or change a stream, delete a message or reach the system account', (identity) => {
    // Proves no identity can undo the log's history: streams are created once and only purged (by coordinators).
    const { publish, subscribe } = natsPermissionsOf(identity);
    for (const stream of [META, ...MINK_KV_BUCKETS.map((bucket) => `KV_${bucket}`)]) {
      for (const call of ['STREAM.DELETE', 'STREAM.UPDATE', 'STREAM.MSG.DELETE']) expect([call, stream, allows(publish, `$JS.API.${call}.${stream}`)]).toEqual([call, stream, false]);
    }
    expect([allows(publish, '$SYS.REQ.SERVER.PING'), allows(subscribe, '$SYS.>'), allows(publish, '>'), allows(subscribe, '>')]).toEqual([false, false, false, false]);
  });

  it('spells the subjects, buckets and the log subject as @mink/protocol and @mink/metalog do', () => {
    // Proves the copies in the permissions follow the code: a renamed subject or bucket fails here, not in a secure cluster.
    expect(CLIENT_INBOX_PREFIX).toBe(SUBJECTS.clientInboxPrefix);
    expect([metaLogSubjectOf(META), metaLogSubjectOf('OTHER_LOG')]).toEqual([metaLogSubject(META), metaLogSubject('OTHER_LOG')]);
    const services = (['coordinator', 'data-node', 'gateway', 'tiering-worker'] as const).map((identity) => natsPermissionsOf(identity).publish);
    for (const bucket of MINK_KV_BUCKETS) for (const publish of services) expect(allows(publish, `$JS.API.STREAM.INFO.KV_${bucket}`)).toBe(true);
    expect([...MINK_KV_BUCKETS].sort()).toEqual([HEARTBEAT_BUCKET, LEASE_BUCKET, SNAPSHOT_BUCKET].sort());
  });

  it('follows the metadata stream a cluster is given, and refuses a name that is not one subject token', () => {
    const coordinator = natsPermissionsOf('coordinator', 'OTHER_LOG');
    expect([allows(coordinator.publish, 'other.log.log'), allows(coordinator.publish, LOG), allows(coordinator.publish, '$JS.API.STREAM.PURGE.OTHER_LOG')]).toEqual([true, false, true]);
    expect(() => natsPermissionsOf('coordinator', 'A.B')).toThrow("the metadata stream name 'A.B' must be one token");
    expect(() => natsPermissionsOf('nobody' as NatsIdentity)).toThrow("no NATS identity 'nobody'");
  });
});
