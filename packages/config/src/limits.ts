/**
 * Every bound of mink in one place (STYLE 6). Related limits are stated next to each other and checked by
 * `assertLimits()` at start.
 */
export const LIMITS = {
  /** Longest table or column name. */
  nameLengthMax: 128,
  columnsPerTableMax: 1024,
  bucketsPerTableMax: 1024,
  /** Outcomes of recently applied commands kept for proposers that wait on them. */
  recentOutcomesMax: 65_536,
  /** How long a proposer waits for its command to apply locally before giving up. */
  proposeTimeoutMs: 15_000,
  /** Attempts of a publish to the metadata log before the proposer gives up. */
  proposeAttemptsMax: 5,
  /** NATS request/reply timeout for internal calls. */
  requestTimeoutMs: 10_000,
  /**
   * A client asks any node for a table's route this long after sending a bucket request that has not been
   * answered, and again as often while it waits: when the route shows another leader (or a newer leader
   * epoch) the request is abandoned and sent to the new leader, so a request to a dead or paused node does
   * not wait out `requestTimeoutMs` (safe for appends through the writer sequences).
   */
  clientLeaderCheckMs: 500,
  /** A view query (a table's route, a node's status) gives up after this long and is asked again, likely of another node. */
  viewQueryTimeoutMs: 1_000,
  /** Attempts a client makes for one request across NotLeader / Unavailable answers. */
  clientAttemptsMax: 20,
  clientBackoffInitialMs: 50,
  /** Attempts to describe a table that a node does not know yet (its view may lag a create by a moment). */
  clientNotFoundAttemptsMax: 3,
  clientBackoffMaxMs: 1_000,
  /**
   * A data node decides again, this often, the buckets whose last decision waits on something no log entry
   * shows: a bucket held by another node (HeldBy, which its liveness turns into a takeover) and a bucket whose
   * action failed.
   */
  syncIntervalMs: 500,
  /**
   * A data node re-checks every bucket it leads or holds at least this often, a safety net under the rounds
   * that log entries and retries start. Each is a pass over the view's buckets (with 100 000 buckets, tens of
   * milliseconds), which every `syncIntervalMs` took most of a data node's CPU.
   */
  syncFullRoundIntervalMs: 10_000,
  /** Sync rounds asked for by changes of the view start at most this often (each is a pass over the view's buckets). */
  syncRoundSpacingMs: 20,
  /** A data node logs the buckets it opened (and those it closed) as one line per this long, with their count and the first few (BucketEventsLog). */
  bucketEventsLogIntervalMs: 1_000,
  /** How long a sync action waits for the entry it appended to apply, or for the coordinator's answer, before the bucket is decided again. */
  syncProposeTimeoutMs: 60_000,
  /** The heartbeat is refreshed this many times per lease_ttl. */
  heartbeatsPerLeaseTtl: 5,
  /** A status query to one node in GET /v1/cluster gives up after this long. */
  statusQueryTimeoutMs: 1_000,
  /** Table creates and drops the coordinator lease holder carries out at once; more are answered Unavailable with a Retry-After. */
  coordinatorActionsInFlightMax: 16,
  /** The holder refuses new creates and drops while a live data node is more than this many metadata log entries behind it. */
  coordinatorAdmissionLagEntriesMax: 2_000,
  /**
   * For this long after acquiring the lease, the holder does not re-lead the buckets of a data node whose
   * process is up and still catching up with the metadata log (after a whole-cluster restart that can take
   * a while with many buckets), so they are not all handed to the first node that registers.
   */
  coordinatorJoiningGraceMs: 60_000,
  /**
   * Past coordinatorJoiningGraceMs, a joining data node whose heartbeats show its applied sequence advanced
   * within this long is still waited for (releadsNow)…
   */
  coordinatorJoiningStalledAfterMs: 20_000,
  /** …up to this long after acquiring the lease; a node not joined by then loses its buckets all the same. */
  coordinatorJoiningGraceMaxMs: 300_000,
  /** The Retry-After of a coordinator action refused by admission. */
  coordinatorRetryAfterMs: 500,
  /** Buckets one LeadBuckets command leads; more moves take several commands. */
  leadBucketsPerCommandMax: 1_024,
  /** Streams one CloseStreams command closes; a node closing more proposes several. */
  closeStreamsPerCommandMax: 1_024,
  /** Streams one OpenStreams command opens; a node opening more proposes several. */
  openStreamsPerCommandMax: 1_024,
  /** Ranges (stream batches) one WAL object may commit. */
  walRangesPerObjectMax: 4_096,
  /** Idempotent writers remembered per stream; the one with the oldest last batch is forgotten first. */
  writersPerStreamMax: 1_024,
  /**
   * Append requests a client keeps in flight to one bucket (like Kafka's max.in.flight.requests.per.connection
   * with idempotence): sent in sequence order, committed in that order, a failed one failing those behind it.
   */
  writerRequestsInFlightMax: 5,
  /** Committed batches remembered per idempotent writer and stream, so a retry of any batch still in flight is answered. At least `writerRequestsInFlightMax`. */
  writerBatchesRemembered: 5,
  /** Rows one append request may carry to one bucket (the client splits larger writes). */
  appendRowsPerRequestMax: 10_000,
  /** Encoded JSON bytes a client puts in one append request (NATS' default max payload is 1 MiB). */
  appendRequestBytesMax: 512 * 1024,
  /**
   * Bytes of appends waiting for one bucket that go out while another request of the bucket is in flight
   * (the client's default `pipelinedAppendBytesMin`); smaller ones wait for it and go out merged. Half a
   * request: large enough that a leader's fixed cost per request is small beside its bytes, small enough
   * that a producer of large appends still keeps several in flight.
   */
  appendRequestBytesPipelined: 256 * 1024,
  /** Records a scan returns when no limit is given, and at most (a reply that large is streamed). */
  scanRecordsDefault: 1_000,
  scanRecordsMax: 100_000,
  /** How long a scan at the high watermark may wait for records (`wait=`). */
  scanWaitMsMax: 30_000,
  /**
   * Bytes of one gRPC message the gateway takes (an Append or Put of rows as JSON text): the HTTP body bound,
   * so a call carries no more than one HTTP request could.
   */
  grpcMessageBytesMax: 64 * 1024 * 1024,
  /**
   * Bytes of received gRPC request messages the gateway holds at once, from the moment a call's handler is
   * handed a message until it is done with it; a message beyond it ends its call RESOURCE_EXHAUSTED (with
   * the Retry-After hint of `grpcInFlightRetryAfterMs`), as the HTTP bound answers 503. At least
   * `grpcMessageBytesMax`. Bytes of a message still arriving are held by grpc-js and not counted; they are
   * bounded by `grpcMessageBytesMax` per call and `grpcConcurrentStreamsPerConnectionMax` calls per connection.
   */
  grpcInFlightMessageBytesMax: 256 * 1024 * 1024,
  /** The retry hint (`mink-retry-after-ms`) of a gRPC call refused by `grpcInFlightMessageBytesMax`. */
  grpcInFlightRetryAfterMs: 1_000,
  /**
   * Calls (HTTP/2 streams) one gRPC connection may have open at once, advertised to the client in SETTINGS:
   * grpc-js and other clients queue the calls beyond it until one ends, and a peer that opens more anyway
   * has them refused. 100 is the least RFC 9113 advises and what most gRPC servers advertise.
   */
  grpcConcurrentStreamsPerConnectionMax: 100,
  /** A gRPC connection with no call open for this long is closed with a GOAWAY (clients reconnect when they next call). */
  grpcConnectionIdleMs: 300_000,
  /**
   * The gateway pings a gRPC connection that has been quiet this long, and closes it when the ping is not
   * answered within `grpcKeepaliveTimeoutMs`, so calls of a client that vanished without closing (a machine
   * gone, a cut network) end instead of holding their streams and bytes for ever.
   */
  grpcKeepaliveTimeMs: 60_000,
  grpcKeepaliveTimeoutMs: 20_000,
  /** How often the gateway's gRPC health Watch looks at readiness to send a change. */
  grpcHealthWatchIntervalMs: 1_000,
  /** On shutdown, how long the gRPC listener lets calls in progress finish before it cancels them (within `serviceStopTimeoutMs`). */
  grpcShutdownGraceMs: 5_000,
  /**
   * Shortest wait at the high watermark of a following gRPC Scan: each wait that ends empty starts another
   * one, so a tiny `wait_ms` would poll the bucket's leader in a tight loop.
   */
  scanFollowWaitMsMin: 1_000,
  /**
   * Bytes of one scan page a data node sends (an Arrow IPC stream in one NATS message; also bounded by the
   * connection's max payload). A larger scan is several pages, which the gateway streams as they come: pages
   * of 2 MiB rather than 8 let the gateway forward one page while the node reads the next (prefetched from
   * the first page on), which measured faster on cold and hot scans alike.
   */
  scanPageBytesMax: 2 * 1024 * 1024,
  /**
   * The max payload of the nats-server a local cluster starts (NATS' default is 1 MiB; it advises at most
   * 8 MiB). Services work with any max payload: scan pages are cut to what the connection allows.
   */
  natsMaxPayloadBytes: 8 * 1024 * 1024,
  /**
   * Requests in one multi message at most (see `coalesce` of requestJson in @mink/transport): the writes a
   * client issues to one node in one turn of its event loop travel together up to this many (and up to the
   * connection's max payload).
   */
  multiRequestPartsMax: 64,
  /**
   * Bytes of one Kafka request frame a data node's Kafka listener takes (Kafka's socket.request.max.bytes is
   * 100 MiB; a produce larger than the WAL queue could never be written anyway). A larger frame closes the
   * connection, as in Kafka.
   */
  kafkaFrameBytesMax: 64 * 1024 * 1024,
  /** Kafka requests one connection may have in flight; beyond them the listener stops reading that socket until responses go out. */
  kafkaRequestsInFlightPerConnectionMax: 64,
  /**
   * Bytes of request frames one Kafka connection may have in flight together (handed to the broker, not yet
   * answered); beyond them the listener stops reading that socket until responses go out. One frame is always
   * taken, so this is at least `kafkaFrameBytesMax`: a connection holds at most this plus one frame being read.
   */
  kafkaInFlightBytesPerConnectionMax: 96 * 1024 * 1024,
  /** Connections one Kafka listener keeps open; a connection beyond them is closed at once (Kafka's max.connections). */
  kafkaConnectionsMax: 4_096,
  /** Connections one client address may keep open to one Kafka listener (Kafka's max.connections.per.ip). */
  kafkaConnectionsPerAddressMax: 512,
  /** A Kafka connection with no request for this long is closed (Kafka's connections.max.idle.ms, 10 minutes). */
  kafkaConnectionIdleMs: 600_000,
  /** A TLS handshake on the Kafka listener not done within this is cut (Node's default is 2 minutes). */
  kafkaTlsHandshakeTimeoutMs: 10_000,
  /**
   * Bytes of record batches one Kafka fetch response carries at most, whatever the client's max_bytes
   * (Kafka's fetch.max.bytes, 55 MB by default); the first batch is always served whole. One partition's
   * part is one read of the stream reader, so at most `streamReadBytesMax`.
   */
  kafkaFetchResponseBytesMax: 32 * 1024 * 1024,
  /**
   * Buckets of `__consumer_offsets`, the primary-key table holding Kafka consumer groups' committed offsets:
   * each group's coordinator is the leader of the bucket its id hashes to, so this many nodes at most share
   * the groups (Kafka's offsets.topic.num.partitions is 50).
   */
  kafkaGroupBuckets: 8,
  /**
   * Members of one Kafka consumer group, counting the member ids handed out to joiners that have not joined
   * yet (Kafka's group.max.size, which is Integer.MAX_VALUE by default): a join beyond it answers
   * GROUP_MAX_SIZE_REACHED. Each member holds its protocols' metadata and its assignment in memory, and
   * every rebalance sends all of them to the leader in one JoinGroup response.
   */
  kafkaGroupMembersMax: 1_000,
  /**
   * Consumer groups one node's group coordinator holds in memory: a join that would create one more is
   * answered GROUP_MAX_SIZE_REACHED (Kafka has no code for a full coordinator) unless an Empty group can
   * be dropped to make room. Committed offsets are not held here and are not bounded by it.
   */
  kafkaGroupsPerCoordinatorMax: 10_000,
  /**
   * Shards of `__transaction_state`, the primary-key table holding Kafka transactional ids' state: an id's
   * transaction coordinator is the leader of the bucket its shard falls in (Kafka's
   * transaction.state.log.num.partitions is 50); a new coordinator lists a shard's ids to resume them.
   */
  kafkaTransactionShards: 16,
  /** Buckets of `__transaction_state`: this many nodes at most share the transaction coordinators. */
  kafkaTransactionBuckets: 8,
  /**
   * How often the coordinator of a bucket of `__consumer_offsets` sweeps it for groups whose offsets expired
   * (ServiceConfig.kafkaOffsetsRetentionMs), reading `kafkaOffsetsSweepPageRows` rows at a time.
   */
  kafkaOffsetsSweepMs: 60_000,
  kafkaOffsetsSweepPageRows: 1_000,
  /**
   * Committed offsets (group, topic, partition) one data node lists in an answer of GET /v1/kafka/groups; the
   * answer says `truncated` beyond them (at about 60 bytes each, it stays well within a NATS message).
   */
  kafkaGroupsOffsetsListedMax: 10_000,
  /** How often a transaction coordinator looks for transactions to complete (after a failover) or to abort (timed out). */
  kafkaTransactionSweepMs: 1_000,
  /**
   * Aborted transactions a stream remembers for read_committed fetches (view: StreamTransactions.aborted);
   * the oldest beyond it is forgotten, and its records then read as committed. Trimming the stream drops
   * those below its start.
   */
  abortedTransactionsPerStreamMax: 1_000,
  /**
   * How long a Kafka Metadata request waits for the topic it creates automatically to exist before it
   * answers LEADER_NOT_AVAILABLE (the client asks again); a create takes one metadata-log round trip.
   */
  kafkaAutoCreateWaitMs: 3_000,
  /** Longest `max_wait_ms` a Kafka fetch waits for `min_bytes` (clients ask for 500 ms by default). */
  kafkaFetchWaitMsMax: 30_000,
  /**
   * HTTP connections (keep-alive, one request at a time each) one client keeps to one data node for scan
   * pages, served by the node's internal scan route. A page request that finds all of them busy (a long poll
   * holds its connection up to `scanWaitMsMax`) goes over NATS instead of queueing behind them.
   */
  clientScanConnectionsPerNodeMax: 16,
  /**
   * How long a client remembers that a data node refused its scan page requests over HTTP (401: the node asks
   * for the cluster secret, which an outside client does not have) and scans that node over NATS without
   * asking again; long enough that refusals cost one request per node per minute, short enough that a node
   * restarted without the secret is used over HTTP again soon.
   */
  clientScanRefusalMemoryMs: 60_000,
  /** Bytes of an error reply to a scan page request over HTTP that a client reads (an error body is a short JSON object). */
  scanErrorReplyBytesMax: 64 * 1024,
  /** Bytes a page leaves to its JSON header below the NATS max payload. */
  scanPageHeaderBytesMax: 16 * 1024,
  /** JSON bytes of one prefix lookup reply, well under NATS' default 1 MiB max payload (scans are paged by scanPageBytesMax). */
  scanReplyBytesMax: 512 * 1024,
  /** Levels of arrays and objects a JSON request body may nest; a row is three (body, rows, row), deeper is refused before anything recurses over it. */
  jsonBodyDepthMax: 64,
  /** Largest HTTP request body accepted by the gateway. */
  httpBodyBytesMax: 64 * 1024 * 1024,
  /**
   * Bytes of request bodies (by Content-Length) one HTTP service holds at once, from arrival until the
   * response is sent; a request beyond it is answered 503 Unavailable with Retry-After before its body is
   * read, so a burst of large appends pushes back on clients instead of growing the heap. At least `httpBodyBytesMax`.
   */
  httpInFlightBodyBytesMax: 256 * 1024 * 1024,
  /** The Retry-After of a request refused by `httpInFlightBodyBytesMax`. */
  httpInFlightRetryAfterMs: 1_000,
  /**
   * How long the connection of a request refused before its body was read (no credentials for the route)
   * stays half-closed after the answer before it is cut: long enough for the caller to read the answer
   * (cutting at once would reset the connection under it), short enough that a caller still sending costs little.
   */
  httpRefusedBodyLingerMs: 500,
  /**
   * Every mink HTTP server (the gateway's API; the health, metrics and internal routes of every service)
   * closes a connection whose request headers have not all arrived this long after the connection opened or
   * the request began (answering 408 Request Timeout): a client that opens connections and sends nothing, or
   * sends its headers a byte at a time, holds a socket this long at most. `MINK_HTTP_HEADERS_TIMEOUT_MS`.
   */
  httpHeadersTimeoutMs: 10_000,
  /**
   * Every mink HTTP server closes a connection whose request, body included, has not all arrived this long
   * after it began (408): a body of `httpBodyBytesMax` must come at 0.5 MiB/s at least. Only the request
   * counts; an answer may take longer to send (a long poll of `scanWaitMsMax`, a streamed scan). At least
   * `httpHeadersTimeoutMs`. `MINK_HTTP_REQUEST_TIMEOUT_MS`.
   */
  httpRequestTimeoutMs: 120_000,
  /**
   * Every mink HTTP server closes a keep-alive connection that stays idle this long after an answer (Node.js
   * waits one second more, and tells clients in `Keep-Alive: timeout=`). Above the 60 s idle timeout of
   * common load balancers, so that one never sends a request on a connection the service is closing.
   * `MINK_HTTP_KEEP_ALIVE_TIMEOUT_MS`.
   */
  httpKeepAliveTimeoutMs: 65_000,
  /**
   * How often an HTTP server looks for connections past their header or request timeout (Node.js' default is
   * 30 s, which would let a connection outlive a 10 s header timeout by 30 s). At most `httpHeadersTimeoutMs`.
   */
  httpTimeoutCheckIntervalMs: 1_000,
  /**
   * Connections every mink HTTP server keeps open at once (Node.js' `server.maxConnections`); one beyond them is
   * dropped as it is accepted, as Kafka's listener does past `kafkaConnectionsMax`. `MINK_HTTP_CONNECTIONS_MAX`.
   */
  httpConnectionsMax: 4_096,
  /** How long a local nats-server or S3 server may take to accept connections after it is spawned. */
  devServerStartTimeoutMs: 15_000,
  /** How long a local server may take to exit after SIGTERM before it gets SIGKILL. */
  devServerStopTimeoutMs: 5_000,
  /** Pause between two readiness probes of a starting local server. */
  devServerPollIntervalMs: 50,
  /** How long a dockerd that `npm run compose:up` started may take to answer. */
  composeDockerdStartTimeoutMs: 60_000,
  /** How long that dockerd may take to exit after SIGTERM (`compose:down`) before it gets SIGKILL. */
  composeDockerdStopTimeoutMs: 30_000,
  /** How long the compose stack may take, once started, until every container is up (and healthy where checked). */
  composeReadyTimeoutMs: 300_000,
  /** How often `compose:up` prints which containers it still waits for. */
  composeProgressIntervalMs: 5_000,
  /** Starts of a local server on a picked port before giving up (another process may take the port first). */
  devServerStartAttemptsMax: 3,
  /** Bytes of a local server's recent output kept in memory to explain a failed start. */
  devServerOutputTailBytesMax: 8_192,
  /** Pause before the second attempt of a metadata log append; doubled per attempt up to the max. */
  proposeBackoffInitialMs: 50,
  proposeBackoffMaxMs: 1_000,
  /** One metadata log append waits this long for the JetStream ack before it counts as failed. */
  metaAppendTimeoutMs: 5_000,
  /** Window in which JetStream drops a repeated message id of the metadata log; retries must fit in it. */
  metaDuplicateWindowMs: 120_000,
  /** Entries one pull of the metadata log tail asks for. */
  metaTailBatchMessagesMax: 256,
  /**
   * A metadata log tail applies entries for at most this long before it lets the event loop run timers
   * and I/O (heartbeats, lease renewals, requests), so a long backlog never starves liveness.
   */
  metaApplySliceMs: 10,
  /** Entries a process applies in one batch at most (the view's maps are copied once per batch). */
  metaApplyBatchEntriesMax: 512,
  /** A process starts a batch of entries at most this often; entries arriving faster wait for the next one. */
  metaApplyIntervalMinMs: 5,
  /** A process behind the purged part of the log reloads the newest snapshot up to this many times in a row before it gives up. */
  metaReloadAttemptsMax: 10,
  /** Pause between two reloads of the newest snapshot when the one found does not yet cover the purged entries. */
  metaReloadRetryDelayMs: 500,
  /**
   * The lease holder keeps log entries that a live data node making progress has not applied yet (it does
   * not purge them with the snapshot rule), but never more than this many entries beyond the rule.
   */
  metaPurgeMarginEntriesMax: 200_000,
  /** A data node whose applied sequence has not advanced for this long while the log moved on no longer holds the purge back. */
  metaMemberStalledAfterMs: 60_000,
  /**
   * A metadata log tail that misses two server heartbeats of this interval recreates its consumer. Short,
   * because it is also what ends the stall of a tail whose pull the server dropped without a word (see
   * `metaTailAppendedEntryWaitMs`) in processes that append nothing; the server sends them only while a
   * pull waits without messages, a few a second per process.
   */
  metaTailIdleHeartbeatMs: 250,
  /**
   * How often the gateway, the coordinators and the tiering worker ask for new metadata log entries (and at
   * once after appending one): they need no entry the moment it is written, and on a busy cluster every
   * process taking every entry as it comes (a wakeup per `CommitWal`, each data node writing tens a second)
   * cost them more than the data path of those entries. Data nodes take each entry as it comes.
   */
  metaTailPacedIntervalMs: 100,
  /**
   * How long a poll of a paced tail that finds nothing held waits on the server for the next entry (see
   * `pullAvailable` in @mink/metalog). An idle paced process (coordinator, gateway, tiering worker) asks once
   * per wait: at a poll per pace (10 a second each) the polls were a third of an idle `mink up`'s CPU.
   */
  metaTailPollWaitMs: 5_000,
  /**
   * A poll of a paced tail not answered within its wait and this long replaces its consumer: the server never
   * answers a poll of a consumer it lost (with its server, say), and answers every other one by the end of its
   * wait. Like two missed idle heartbeats of an eager tail, give or take.
   */
  metaTailPollTimeoutMs: 1_000,
  /** Recent samples of the NATS server's clock kept to estimate its offset from the local clock. */
  serverClockSamplesMax: 64,
  /**
   * Reads of the clock probe's key after its write before the probe fails: in a NATS cluster a KV get may
   * be answered by a replica that has not stored the write yet, so a miss is read again after
   * `serverClockProbeReadRetryMs`.
   */
  serverClockProbeReadsMax: 40,
  serverClockProbeReadRetryMs: 25,
  /** `mink up` and LocalCluster: how long one service may take until its /readyz answers 200. */
  serviceReadyTimeoutMs: 60_000,
  /** How often a starting service's /readyz is polled, and how long one poll may take. */
  readinessPollIntervalMs: 100,
  readinessRequestTimeoutMs: 1_000,
  /** A stopping service gets this long after SIGTERM before it is sent SIGKILL. */
  serviceStopTimeoutMs: 10_000,
  /** Lines of a process's log quoted in an error when it fails to start. */
  logTailLinesMax: 20,
  /** Largest local cluster `mink up` starts, so a typo cannot fork hundreds of processes. */
  localDataNodesMax: 32,
  localCoordinatorsMax: 8,
  localTieringWorkersMax: 8,
  /** Streams one TrimStreams names at most (the retention loop splits larger lists). */
  trimStreamsPerCommandMax: 1_000,
  /** Pause between two rounds of the lease holder's retention loop. */
  retentionIntervalMs: 5_000,
  /** Samples of a stream's committed end the retention loop keeps per TTL: a trim comes at most TTL / this late. */
  retentionSamplesPerTtl: 16,
  /** Partitions a table may ask to have created ahead of the current one (`partition.precreate`): two days of hours. */
  partitionPrecreateMax: 48,
  /** Pause between two rounds of the lease holder's partition lifecycle loop (creating partitions ahead, dropping old ones). */
  partitionIntervalMs: 5_000,
  /** CreatePartition and DropPartition entries one round of that loop proposes at most; the rest wait for the next round. */
  partitionActionsPerRoundMax: 64,
  /** Bytes of lake data files a data node keeps for the union read (scans below a stream's start). */
  lakeReadCacheBytesMax: 64 * 1024 * 1024,
  /** Lake metadata objects whose data file lists a data node keeps for the union read. */
  lakeReadMetadataCachedMax: 16,
  /** How long a tiering worker waits before asking again when no round was due. */
  tieringPollMs: 1_000,
  /** One request of the `mink` CLI to the gateway gives up after this long. */
  cliRequestTimeoutMs: 60_000,
  /** Requests one object store client has in flight at once; more wait in its queue. */
  objectStoreConcurrencyMax: 16,
  /** Requests waiting for an in-flight slot of one object store client before new ones are refused as Unavailable. */
  objectStoreQueuedRequestsMax: 10_000,
  /** Attempts of one object store request (the first one included) before it fails as Unavailable. */
  objectStoreAttemptsMax: 5,
  /** Backoff ceiling before the second attempt of an object store request; doubled per attempt up to the max, then jittered. */
  objectStoreBackoffInitialMs: 50,
  objectStoreBackoffMaxMs: 2_000,
  /** An object store request gives up when the connection is not open after this long. */
  objectStoreConnectTimeoutMs: 5_000,
  /** An object store request gives up when the response headers have not arrived after this long. */
  objectStoreResponseTimeoutMs: 30_000,
  /** An object store body transfer gives up when its socket is idle for this long. */
  objectStoreSocketIdleTimeoutMs: 30_000,
  /** Keys in one DeleteObjects request; S3 refuses more. */
  objectStoreDeleteKeysPerRequestMax: 1_000,
  /** Keys asked for in one ListObjectsV2 page; S3 returns at most this many. */
  objectStoreListKeysPerPageMax: 1_000,
  /** Keys one listing may return before it fails; a listing is for maintenance and must not exhaust memory. */
  objectStoreListedKeysMax: 1_000_000,
  /** A WAL writer flushes its queued appends as one object once they reach this many bytes (its default `flushBytes`). */
  walFlushBytes: 1024 * 1024,
  /** A WAL writer flushes a smaller object this long after appends started waiting (its default `lingerMs`). */
  walLingerMs: 5,
  /**
   * Whether a WAL writer with no object in flight sends what was queued at the end of that turn of the event
   * loop instead of lingering (its default `flushWhenIdle`): nothing is uploading for appends to gather
   * behind, so lingering only adds its time to every ack of a lone request (a Kafka OffsetCommit, a small
   * append); under load an object is always in flight and appends gather behind it as before.
   */
  walFlushWhenIdle: true,
  /**
   * WAL objects one writer uploads at once (its default `uploadsInFlight`); they are committed one after
   * another in the order they were formed, so a stream's batches still commit in order.
   */
  walUploadsInFlightMax: 4,
  /** The most WAL uploads in flight `MINK_WAL_UPLOADS_IN_FLIGHT` may ask for. */
  walUploadsInFlightLimit: 64,
  /** The largest `MINK_HEAP_GROWING_PERCENT`: a heap may grow elevenfold between full collections, no more. */
  heapGrowingPercentMax: 1000,
  /**
   * The most a service's heap grows between full collections: `MINK_HEAP_GROWING_PERCENT` is lowered for a
   * large heap so that its live size times the percent stays under this. The fourfold growth that spares
   * a gateway of a 30 MB heap most of its full collections let a process holding the view of 100 000
   * buckets (a live heap of 150–200 MB) reach 600 MiB resident before collecting.
   */
  heapGrowthBytesMax: 128 * 1024 * 1024,
  /** The lowest percent the cap above sets: a heap always has room to grow by a fifth before the next full collection. */
  heapGrowingPercentMin: 20,
  /** Bytes of appends one WAL writer holds waiting for a flush; more are refused as Unavailable so a slow store pushes back on clients. At least `walFlushBytes`. */
  walQueuedBytesMax: 64 * 1024 * 1024,
  /** Bytes of recently committed batches a stream reader keeps in memory (its default `cacheBytesMax`). */
  streamCacheBytesMax: 128 * 1024 * 1024,
  /** Payload bytes one stream read collects before it stops; it returns at least one batch, however large. */
  streamReadBytesMax: 8 * 1024 * 1024,
  /** Batches one stream read returns at most, which also bounds the ranged GETs it issues at once. */
  streamReadBatchesMax: 1_024,
  /**
   * Bytes one ranged GET of a stream read fetches at most when it coalesces back-to-back batches: a larger
   * read is several GETs in flight at once, which S3 (and s3rver) serve faster than one long GET.
   */
  streamGetBytesMax: 2 * 1024 * 1024,
  /** Ranged GETs one stream read, or one prefetch of a scan, has in flight at once; more wait for a slot. */
  streamReadsInFlightMax: 4,
  /**
   * Bytes of payloads a stream reader keeps from the object store (its default `readCacheBytesMax`), apart from
   * the cache of committed batches; bytes of prefetch GETs in flight count against it, so prefetch stays within it.
   */
  streamReadCacheBytesMax: 64 * 1024 * 1024,
  /** The largest bound `MINK_STREAM_TAIL_CACHE_BYTES`, `MINK_STREAM_READ_CACHE_BYTES` and `MINK_LAKE_FILE_CACHE_BYTES` take: 16 GiB. */
  cacheBytesLimit: 16 * 1024 * 1024 * 1024,
  /** Windows (what one read takes at most) a sequential scan fetches ahead of its reads. */
  streamPrefetchWindowsMax: 2,
  /** Buckets whose last read a stream reader remembers to recognise sequential scans; the least recently read is forgotten first. */
  streamPrefetchBucketsMax: 4_096,
  /** Snapshots of the metadata view kept in object storage; the log is purged below the oldest of them, so older ones are useless. */
  metaSnapshotsKept: 3,
  /** Encoding a snapshot yields to the event loop after this much work, so the lease holder's heartbeats and lease renewals keep running. */
  metaSnapshotYieldEveryMs: 10,
  /** Bytes of one snapshot's JSON, before gzip; a larger view is refused at write time so every snapshot written can be loaded. */
  metaSnapshotJsonBytesMax: 256 * 1024 * 1024,
  /** Compare-and-set attempts on the snapshot pointer before a snapshot write gives up (another writer kept winning). */
  metaSnapshotPointerAttemptsMax: 10,
  /** Loads of the newest snapshot a starting process tries when snapshots and purges keep overtaking it. */
  metaSnapshotLoadAttemptsMax: 5,
  /** After a failed snapshot round, the next one waits at least this long, so a broken object store is not hammered once per command. */
  metaSnapshotRetryDelayMs: 5_000,
  /** A joining process gives up when its view has not caught up with the log within this long. */
  joinCatchUpTimeoutMs: 60_000,
  /** Slices one CommitStreamObject may put into one stream object. */
  streamObjectSlicesMax: 4_096,
  /** Bytes of batches a compactor gathers into one stream object (its default `objectBytesMax`); a single larger batch still gets an object of its own. */
  streamObjectBytesMax: 64 * 1024 * 1024,
  /**
   * Bytes of one packed slice of a stream object (its batches and their index; a compactor's default
   * `packBytesMax`): compaction packs the batches it moves into slices of this size, so a stream holds one
   * slice in every process's view per ~1 MiB of history instead of one per append. A read of old data
   * fetches a whole packed slice.
   */
  streamPackedSliceBytesMax: 1024 * 1024,
  /** Batches of one packed slice at most (its index is 8 bytes per batch). */
  streamPackedSliceBatchesMax: 1_024,
  /**
   * A compaction moves the stream-object slices leading a stream's `slices` into its `history` once there
   * are more than this many, so a CommitWal, which copies `slices`, copies at most about this many plus
   * the WAL slices not yet compacted, however long the stream's history (docs/architecture.md §7).
   */
  streamSlicesFoldMin: 256,
  /** A stream is compacted once this many of its slices live in WAL objects (a compactor's default `minSlices`). */
  compactionSlicesMin: 8,
  /**
   * Stream objects one compaction round writes for one stream at most (a compactor's default
   * `objectsPerStreamRoundMax`): a stream whose WAL slices are more than one object holds is compacted again in
   * the same round, so a bucket taking more than `streamObjectBytesMax` per round does not keep a growing
   * backlog of WAL slices (which every CommitWal copies). 8 × 64 MiB per 10-s round.
   */
  compactionObjectsPerStreamRoundMax: 8,
  /** Ranged GETs one compactor has in flight while it gathers the batches of a stream object. */
  compactionReadsInFlightMax: 16,
  /** Pause between two compaction rounds of a data node. */
  compactionIntervalMs: 10_000,
  /** How long an unreferenced object stays readable before it is deleted, so readers holding an older view finish (a garbage collector's default `graceMs`). */
  garbageGraceMs: 30_000,
  /** Keys one ForgetObjects names, and so the keys a garbage collector deletes per batch. */
  forgetObjectsKeysMax: 1_000,
  /** Pause between two garbage collection rounds of the coordinator lease holder. */
  garbageCollectionIntervalMs: 10_000,
  /** Bytes of one encoded primary key of a PK table; lmdb-js accepts keys up to 1978 bytes, so this leaves room for a tablet's own key prefix. */
  primaryKeyBytesMax: 1_024,
  /** Puts and deletes one PK write batch may hold, so that planning it holds a bounded number of rows in memory. */
  pkBatchOperationsMax: 10_000,
  /** Operations one group commit of a PK bucket plans together at most; requests beyond wait for the next group. */
  pkGroupOperationsMax: 50_000,
  /** Group commits of one PK bucket in the WAL at once (their batches commit in order). */
  pkGroupsInFlightMax: 4,
  /**
   * Operations queued for a PK bucket that start another group while one is in flight; fewer wait for the
   * group in flight to settle and go out together in the next. Each group costs its leader about as much as
   * 60 operations (an Arrow batch read and written, an LMDB commit) and every process a range to apply, so
   * 1 000 keeps that under 6 %; a writer of large requests still has several groups in flight. Measured on 3
   * data nodes with 8 clients putting 125-row requests: every group held one request, and groups of all that
   * waited took 20 % less data-node CPU per row.
   */
  pkGroupOperationsPipelined: 1_000,
  /** Writers whose numbered puts and deletes a PK bucket's leader keeps the order of (see decidePkWriterOrder); the least recently used beyond it is forgotten. */
  pkWritersRememberedMax: 1_024,
  /** Free bytes a KV tablet's file system must keep beyond twice a batch's size, or the batch is refused as a full disk (LMDB grows its file in steps of about 0.5 MiB). */
  kvDiskHeadroomBytes: 4 * 1024 * 1024,
  /**
   * Keys one lookup request to a bucket may hold. The answer travels in one NATS message (1 MiB by
   * default), so this keeps rows of up to ~400 bytes of JSON within one reply; the client splits larger lookups.
   */
  lookupKeysPerRequestMax: 2_000,
  /** Rows one prefix lookup returns per prefix at most (and its default limit); replies are also cut at scanReplyBytesMax. */
  prefixLookupRowsMax: 2_000,
  /** KV snapshots kept per PK bucket in object storage; committing a newer one releases the oldest beyond this. */
  kvSnapshotsKept: 2,
  /** Bytes of one key of a KV tablet: the largest key lmdb-js stores with its default page size. */
  kvKeyBytesMax: 1_978,
  /** Writes one KV tablet apply may hold; the batch sits in memory until its transaction commits. */
  kvApplyWritesMax: 500_000,
  /** Entries one KV prefix scan returns, so a scan holds a bounded number of entries in memory. */
  kvScanEntriesMax: 100_000,
  /** Keys one KV batched lookup reads. */
  kvLookupKeysMax: 100_000,
  /**
   * Replicas of the metadata stream and of mink's KV buckets at most (`MINK_META_REPLICAS`): JetStream
   * replicates a stream to at most 5 servers.
   */
  metaReplicasMax: 5,
  /** nats-servers a local cluster runs at most (`mink up --nats-cluster`); an odd count from 1 to this. */
  localNatsServersMax: 5,
  /** How long a clustered nats-server may take, from its start, until JetStream answers through it (meta leader elected). */
  natsJetStreamReadyTimeoutMs: 30_000,
  /** How long one GET of a nats-server's monitoring endpoint (`/jsz`) may take. */
  natsMonitorRequestTimeoutMs: 1_000,
  /** Pause before opening the watch of the heartbeat bucket again after a failed open; grows by this much per failure. */
  livenessWatchRetryInitialMs: 250,
  /** Longest pause between two attempts to open the watch of the heartbeat bucket. */
  livenessWatchRetryMaxMs: 2_000,
  /**
   * How long one pull of the metadata log tail waits on the server. nats.js also pauses this long between its
   * attempts to find and re-create a consumer lost with a server, so it bounds how long the tail stalls after one.
   */
  metaTailPullExpiresMs: 5_000,
  /**
   * The metadata log tail replaces its consumer when the log has held the next entry this long without
   * delivering it (its server went away, say). Also how long nothing may arrive before the tail checks.
   */
  metaTailStallMs: 2_000,
  /** How often the metadata log tail checks for a stall while nothing arrives. */
  metaTailCheckIntervalMs: 500,
  /**
   * How often it checks while its last check found the log holding nothing it has not delivered (an idle
   * cluster): a lost entry is then noticed up to this much later (a lost delivery needs a server or connection
   * failure, which replace the consumer by themselves in most cases). At every 500 ms, each process of an idle
   * `mink up` asked for the stream's info twice a second, about a third of the cluster's idle CPU.
   */
  metaTailIdleCheckIntervalMs: 2_000,
  /**
   * After a process appends an entry, its tail looks this long later whether the entry arrived; if the
   * consumer delivered nothing at all meanwhile, the tail replaces it (see `appendedEntryAction` in
   * @mink/metalog). Delivery normally takes well under a millisecond, so this is far above it, and far
   * below the two idle heartbeats nats.js waits before it pulls again.
   */
  metaTailAppendedEntryWaitMs: 100,
  /** A consumer of the metadata log tail left behind (its process died) is removed by the server after this long. */
  metaTailConsumerInactiveMs: 60_000,
  /** Pause before the metadata log tail tries again to create a consumer; grows by this much per failure. */
  metaTailRetryInitialMs: 100,
  /** Longest pause between two attempts of the metadata log tail to create a consumer. */
  metaTailRetryMaxMs: 1_000,
  /** The metadata log tail reports every this many failed attempts in a row to create a consumer (and keeps trying). */
  metaTailReportFailuresAfter: 20,
  /**
   * Timeout of the JetStream requests that (re-)create the consumers of the metadata log tail and of the
   * heartbeat watch. Short, because such a request sent while JetStream elects a meta leader is lost: the
   * next attempt, not the end of a long timeout, is what gets through once the leader is elected.
   */
  jetStreamFollowRequestTimeoutMs: 2_000,
  /**
   * The heartbeat watch is opened again when the bucket has held an entry this long that the watch did not
   * deliver (the server holding its consumer went away without this process losing its connection).
   */
  livenessWatchStallMs: 1_500,
  /** How often the heartbeat watch is checked for a stall while no entry arrives. */
  livenessWatchCheckIntervalMs: 500,
  /** How often a liveness tracker that is being asked who is live writes its probe key (see LivenessTracker). */
  livenessProbeIntervalMs: 500,
  /** A probe not delivered back by the watch within this long makes the tracker blind until one is. */
  livenessProbeTimeoutMs: 1_000,
  /** A liveness tracker stops probing when nobody asked who is live for this long. */
  livenessProbeIdleMs: 10_000,
  /** Blind periods a liveness tracker remembers (older ones no longer matter to any heartbeat's age). */
  livenessBlindPeriodsKept: 16,
  /** Pause before a joining process tries a step again that NATS could not answer yet; grows by this much per attempt. */
  joinRetryInitialMs: 200,
  /** Longest pause between two attempts of a step of joining. */
  joinRetryMaxMs: 2_000,
} as const;

export const DEFAULTS = {
  leaseTtlMs: 30_000,
  coordinatorTickMs: 5_000,
  gatewayPort: 8080,
  kafkaPort: 9092,
  grpcPort: 50051,
  nodes: 3,
  coordinators: 2,
  s3Bucket: 'mink',
  metaStream: 'MINK_META',
  /** Buckets of a table created by `mink table create` without `--buckets`. */
  tableBuckets: 8,
  /**
   * The coordinator lease holder snapshots the metadata view every this many applied commands. The log
   * keeps everything above the oldest of the kept snapshots, so a process can fall behind by about
   * (metaSnapshotsKept - 1) × this many entries and still catch up by tailing: under append load (tens
   * of CommitWal a second) that is minutes, enough for a node paused past lease_ttl to come back. A
   * starting process replays at most this many entries after its snapshot.
   */
  metaSnapshotEveryCommands: 10_000,
  /** A PK bucket's leader snapshots its KV tablet to object storage this often (and on clean close). */
  kvSnapshotIntervalMs: 60_000,
  /** `MINK_KAFKA_OFFSETS_RETENTION_MS`: a member-less consumer group's offsets are kept 7 days, Kafka's offsets.retention.minutes. */
  kafkaOffsetsRetentionMs: 7 * 24 * 3_600_000,
  /**
   * `MINK_HEAP_GROWING_PERCENT`: each service runs V8 with `--heap-growing-percent=300`, so after a full
   * collection the next one starts when the heap has grown fourfold, not the 1.1–2 fold V8 picks for a
   * small heap. V8 counts the bytes of ArrayBuffers allocated since the last full collection against the
   * old generation's limit, and a service moves data through short-lived buffers (socket reads, scan pages,
   * Arrow batches): with a heap of about 30 MB the gateway started a full collection every 7–15 MB
   * forwarded, 10 a second during a scan, and spent a quarter to half of its CPU in them. Measured on the
   * gateway alone (Arrow scans of 183 MB, alternating runs): 640–950 ms of CPU before, 360–560 ms after.
   */
  heapGrowingPercent: 300,
  /**
   * The Node.js flags every mink service runs with (`mink up` passes them, the images set them as
   * NODE_OPTIONS). `--max-semi-space-size=2`: V8's young generation stops growing at 2 MiB semi-spaces
   * instead of 16 MiB; a service's short-lived garbage (requests, Arrow batches, NATS messages) is collected
   * a little more often, in smaller scavenges. Measured with `pnpm bench -- --only append --no-failover
   * --batch 500` (7 processes, three runs each): all processes together at peak 1.1–1.2 GiB (anonymous
   * 750–862 MiB) before, 962–966 MiB (anonymous 612–616 MiB) after; data nodes' CPU per MB 0.039–0.054
   * before, 0.042–0.054 after, rows/s against the floor within the runs' spread. 1 MiB saved nothing more;
   * 4 MiB saved 30 MiB less.
   */
  serviceNodeFlags: ['--max-semi-space-size=2'] as readonly string[],
  /**
   * Node.js flags of one role on top of `serviceNodeFlags` (on its command line, which V8 reads after
   * NODE_OPTIONS, so they win: `mink up` passes them, the images' CMD and docker-compose.local.yml's commands
   * carry them). The gateway's young generation may grow to 16 MiB semi-spaces: under many small appends it
   * turns every request body into short-lived row buffers and Arrow batches, and with 2 MiB semi-spaces V8's
   * collector took 17–20 % of its CPU. `pnpm bench -- --only append --no-failover --concurrency 32 --batch
   * 50`, three pairs of runs alternating (2026-12-07): gateway CPU per MB 0.130–0.132 → 0.108–0.109 s, its
   * rows/s 0.51–0.55 → 0.55–0.59 × the floor's, all processes' PSS at peak 778–787 → 771–786 MiB and the
   * gateway's peak RSS 213–217 → 211–213 MiB (no growth measured). A data node's may grow to 8 MiB: it
   * builds the view of a 100 000-bucket cluster and opens a third of its buckets when the cluster restarts,
   * with its collector at about 21 % of its CPU. Restarts of a kept 100 000-bucket bench folder, alternating
   * (2026-12-07, load average 5–9): data nodes' CPU 31.1–35.6 s with 2 MiB, 29.7 and 33.5 s with 8 MiB (27.7
   * and 27.8 s with 16 MiB); under 32 × 50-row appends the largest data node peaked at 196–203 MiB with 2 MiB,
   * 204 MiB with 8 and 220 MiB with 16 (all processes' PSS 787–805, 801 and 867–869 MiB).
   */
  roleNodeFlags: { gateway: ['--max-semi-space-size=16'], 'data-node': ['--max-semi-space-size=8'] } as Readonly<Partial<Record<'coordinator' | 'data-node' | 'gateway' | 'tiering-worker', readonly string[]>>>,
} as const;

export function assertLimits(): void {
  if (LIMITS.heartbeatsPerLeaseTtl < 2) throw new Error('a lease must see at least two heartbeats');
  if (LIMITS.clientBackoffInitialMs > LIMITS.clientBackoffMaxMs) throw new Error('backoff bounds are inverted');
  if (LIMITS.httpInFlightBodyBytesMax < LIMITS.httpBodyBytesMax) throw new Error('one request of the largest body must fit in flight');
  if (LIMITS.grpcInFlightMessageBytesMax < LIMITS.grpcMessageBytesMax) throw new Error('one gRPC message of the largest size must fit in flight');
  if (LIMITS.httpHeadersTimeoutMs > LIMITS.httpRequestTimeoutMs) throw new Error('the headers of a request must be able to arrive within its request timeout');
  if (LIMITS.httpTimeoutCheckIntervalMs > LIMITS.httpHeadersTimeoutMs) throw new Error('HTTP timeouts must be checked at least once per header timeout');
  if (LIMITS.grpcShutdownGraceMs >= LIMITS.serviceStopTimeoutMs) throw new Error('the gRPC shutdown grace must end before a stopping service is killed');
  if (LIMITS.scanFollowWaitMsMin > LIMITS.scanWaitMsMax) throw new Error('a following scan must be able to wait its shortest wait');
  if (LIMITS.writerBatchesRemembered < LIMITS.writerRequestsInFlightMax) throw new Error('a writer must be able to retry every request it has in flight');
  if (LIMITS.pkGroupOperationsPipelined < 1 || LIMITS.pkGroupOperationsPipelined > LIMITS.pkGroupOperationsMax) {
    throw new Error('a PK group of pkGroupOperationsPipelined operations must fit in one group');
  }
  if (LIMITS.appendRequestBytesPipelined < 1 || LIMITS.appendRequestBytesPipelined > LIMITS.appendRequestBytesMax) {
    throw new Error('the bytes of appends sent beside a request in flight must fit in one request');
  }
  if (LIMITS.proposeAttemptsMax * (LIMITS.metaAppendTimeoutMs + LIMITS.proposeBackoffMaxMs) >= LIMITS.metaDuplicateWindowMs) {
    throw new Error('retries of one metadata append must fit in the de-duplication window');
  }
  if (LIMITS.metaSnapshotsKept < 1) throw new Error('at least one snapshot of the metadata view must be kept');
  if (LIMITS.metaTailPacedIntervalMs < 1 || LIMITS.metaTailPollTimeoutMs >= LIMITS.metaTailStallMs) {
    throw new Error('a paced tail needs a positive pace, and must give up on a poll silent past its wait sooner than the stall check gives up on a held entry');
  }
  if (LIMITS.metaTailPollWaitMs <= LIMITS.metaTailPacedIntervalMs) throw new Error('a paced tail\'s poll must wait longer than its pace');
  if (LIMITS.metaTailIdleCheckIntervalMs < LIMITS.metaTailCheckIntervalMs) throw new Error('the stall check of an up-to-date tail cannot ask more often than that of one waiting');
}
