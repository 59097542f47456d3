import { DEFAULTS } from '@mink/config';

/**
 * Who may do what on the NATS servers of a secure cluster (issue 42, item 1). Every service role has one
 * identity, outside clients (a `MinkClient`: the CLI, an application) one more, and the local cluster's own
 * checks (readiness, JetStream answering) a last one, `admin`. Each is allowed only the subjects it uses:
 *
 * - Only the coordinators, data nodes and tiering workers append to the metadata log (`mink.meta.log`, the
 *   subject of the stream `MINK_META`); only the coordinators purge it (below a snapshot of the view) and
 *   write the coordinator lease and the snapshot pointer; only data nodes write heartbeats.
 * - Every service reads the log (its own consumers of the stream), the heartbeat bucket and the snapshot
 *   pointer, and may create the stream and the KV buckets: whichever process starts first creates them
 *   (`ClusterMember.join`). Nobody may delete or update a stream, or delete a message of one.
 * - A service subscribes to its own role's request subjects (`SUBJECTS` of @mink/protocol) and publishes
 *   to those of the roles it calls; it answers on `_INBOX.>` (where any requester waits).
 * - The client identity publishes coordinator and data node requests only, and hears replies only on its
 *   own inbox prefix (`CLIENT_INBOX_PREFIX`, which `MinkClient.connect` uses), so it can neither use
 *   JetStream, nor write the log, nor serve or overhear another process's requests.
 *
 * The subjects are spelled out here, not imported, because this package depends on @mink/config only; its
 * table test (packages/metalog/src/nats-permissions.spec.ts, beside the bucket and log names) checks them
 * against @mink/protocol and @mink/metalog, so a renamed subject fails a test.
 */
export type NatsServiceIdentity = 'coordinator' | 'data-node' | 'gateway' | 'tiering-worker';
export type NatsIdentity = NatsServiceIdentity | 'client' | 'admin';

/** Every identity, in the order the secrets and the server config list them. */
export const NATS_IDENTITIES: readonly NatsIdentity[] = ['coordinator', 'data-node', 'gateway', 'tiering-worker', 'client', 'admin'];

/** What one identity may publish to and subscribe to (nats-server subject patterns, `*` and `>` wildcards). */
export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
}

/** The inbox prefix of `MinkClient.connect` (SUBJECTS.clientInboxPrefix of @mink/protocol): a client hears replies there only. */
export const CLIENT_INBOX_PREFIX = '_INBOX.client';
/** The inboxes of the services (nats.js's default prefix); a service may answer any requester, a client's too. */
const INBOXES = '_INBOX.>';

/** Request subjects (SUBJECTS of @mink/protocol). Node ids match NODE_ID_PATTERN: one token each. */
const COORDINATOR_RPC = 'mink.coordinator.rpc';
const COORDINATOR_DIRECT = 'mink.coordinator.direct.*';
const ANY_NODE_RPC = 'mink.nodes.rpc';
const NODE_RPC = 'mink.node.*.rpc';

/** The KV buckets of @mink/metalog (MINK_KV_BUCKETS), with the keys they hold. */
const HEARTBEAT_BUCKET = 'mink_heartbeats';
const LEASE_BUCKET = 'mink_lease';
const SNAPSHOT_BUCKET = 'mink_meta_snapshots';
const KV_BUCKETS = [HEARTBEAT_BUCKET, LEASE_BUCKET, SNAPSHOT_BUCKET] as const;
/** The key every liveness tracker (and the lease) writes to read the server's clock. */
const CLOCK_PROBE_KEY = 'clock';
const COORDINATOR_LEASE_KEY = 'coordinator';

/** 'MINK_META' → 'mink.meta.log', as `metaLogSubject` of @mink/metalog derives the log's one subject. */
export function metaLogSubjectOf(metaStream: string): string {
  return `${metaStream.toLowerCase().replace(/_/g, '.')}.log`;
}

/** The JetStream API calls that create `stream` if it is missing and read it through consumers of one's own. */
function streamReading(stream: string): string[] {
  return [
    `$JS.API.STREAM.CREATE.${stream}`,
    `$JS.API.STREAM.INFO.${stream}`,
    // Consumers with a name (nats.js against a 2.9+ server: `….CREATE.<stream>.<name>[.<filter>]`) and without.
    `$JS.API.CONSUMER.CREATE.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}.>`,
    `$JS.API.CONSUMER.INFO.${stream}.*`,
    `$JS.API.CONSUMER.DELETE.${stream}.*`,
    `$JS.API.CONSUMER.MSG.NEXT.${stream}.*`,
    // Flow control of a push consumer (a KV watch) is answered on these.
    `$JS.FC.${stream}.>`,
  ];
}

/** Reading a KV bucket: its stream as above, and a key's value (direct get, or a message get on older streams). */
function bucketReading(bucket: string): string[] {
  const stream = `KV_${bucket}`;
  return [...streamReading(stream), `$JS.API.DIRECT.GET.${stream}`, `$JS.API.DIRECT.GET.${stream}.>`, `$JS.API.STREAM.MSG.GET.${stream}`];
}

/**
 * What every service does: JetStream's account check, the metadata log read (and an entry read again by its
 * sequence, when one arrived damaged) and every KV bucket read, and the clock probe.
 */
function serviceBase(metaStream: string): NatsPermissions {
  return {
    publish: ['$JS.API.INFO', ...streamReading(metaStream), `$JS.API.STREAM.MSG.GET.${metaStream}`, ...KV_BUCKETS.flatMap(bucketReading), `$KV.${HEARTBEAT_BUCKET}.${CLOCK_PROBE_KEY}`, INBOXES],
    subscribe: [INBOXES],
  };
}

/**
 * The permissions of `identity` in a cluster whose metadata log is the stream `metaStream`. Pure: the
 * nats-server config writer (`natsAuthorizationUsersBlock`) turns them into `permissions {}`.
 */
export function natsPermissionsOf(identity: NatsIdentity, metaStream: string = DEFAULTS.metaStream): NatsPermissions {
  if (!/^[A-Za-z0-9_-]+$/.test(metaStream)) throw new Error(`the metadata stream name '${metaStream}' must be one token of A-Z a-z 0-9 _ -`);
  const appendToLog = metaLogSubjectOf(metaStream);
  const plus = (base: NatsPermissions, extra: Partial<NatsPermissions>): NatsPermissions => ({
    publish: [...base.publish, ...(extra.publish ?? [])],
    subscribe: [...base.subscribe, ...(extra.subscribe ?? [])],
  });
  switch (identity) {
    case 'coordinator':
      return plus(serviceBase(metaStream), {
        publish: [
          appendToLog,
          // Below a snapshot of the view, the lease holder purges the log.
          `$JS.API.STREAM.PURGE.${metaStream}`,
          `$KV.${LEASE_BUCKET}.${COORDINATOR_LEASE_KEY}`,
          `$KV.${LEASE_BUCKET}.${CLOCK_PROBE_KEY}`,
          `$KV.${SNAPSHOT_BUCKET}.${metaStream}`,
          // A replica that does not hold the lease forwards to the one that does.
          COORDINATOR_DIRECT,
        ],
        subscribe: [COORDINATOR_RPC, COORDINATOR_DIRECT],
      });
    case 'data-node':
      return plus(serviceBase(metaStream), {
        publish: [appendToLog, `$KV.${HEARTBEAT_BUCKET}.hb.data-node.*`, COORDINATOR_RPC, ANY_NODE_RPC, NODE_RPC],
        subscribe: [NODE_RPC, ANY_NODE_RPC],
      });
    case 'gateway':
      return plus(serviceBase(metaStream), { publish: [COORDINATOR_RPC, ANY_NODE_RPC, NODE_RPC] });
    case 'tiering-worker':
      return plus(serviceBase(metaStream), { publish: [appendToLog, COORDINATOR_RPC] });
    case 'client':
      return { publish: [COORDINATOR_RPC, ANY_NODE_RPC, NODE_RPC], subscribe: [`${CLIENT_INBOX_PREFIX}.>`] };
    case 'admin':
      // The local cluster's readiness checks: connect, and ask whether JetStream answers (and how a stream stands).
      return { publish: ['$JS.API.INFO', '$JS.API.STREAM.INFO.*'], subscribe: [INBOXES] };
    default:
      throw new Error(`no NATS identity '${String(identity)}'`);
  }
}
