/**
 * SASL and TLS on the Kafka listener (issue "Security", item 2), on a real local cluster with real clients:
 * kafkajs and librdkafka (kcat) authenticate with SASL/PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 against the
 * gateway's tokens file (user = a token's name, password = its secret), first over plain TCP and then, with
 * the data node restarted with a certificate, over TLS. A connection that has not authenticated gets nothing
 * (kafkajs without SASL fails, kcat without SASL gets no metadata), a wrong secret fails the exchange, and the
 * scopes hold: a read-only token producing gets TOPIC_AUTHORIZATION_FAILED and stores nothing, a token
 * limited to one table sees no other topic, only an admin token creates topics. No secret reaches a log.
 */
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { Kafka, logLevel, type SASLOptions } from 'kafkajs';
import { LIMITS } from '@mink/config';
import { LOCAL_CERTIFICATE_NAMES, LocalCluster, ensureServerTlsFiles, tlsFilesOf } from '@mink/devcluster';
import { ONE_NODE_CLUSTER, eventually, kafkaBrokersOf, temporaryDirectory } from './helpers';

jest.setTimeout(300_000);

const TOKENS = {
  ops: { name: 'ops', token: 'ops-secret-000000000000001', scopes: ['admin'] },
  reader: { name: 'reader', token: 'reader-secret-00000000001', scopes: ['read'] },
  writer: { name: 'clicks-writer', token: 'writer-secret-00000000001', scopes: ['write'], tables: ['clicks'] },
};
type TokenName = keyof typeof TOKENS;

function sasl(mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512', who: TokenName, password = TOKENS[who].token): SASLOptions {
  return { mechanism, username: TOKENS[who].name, password } as SASLOptions;
}

/** kcat (librdkafka) with `settings` as -X options; its stdout, or the failure's stderr. */
async function kcat(args: string[], settings: Record<string, string>, input?: string): Promise<{ ok: boolean; out: string }> {
  const options = Object.entries(settings).flatMap(([key, value]) => ['-X', `${key}=${value}`]);
  return new Promise((resolve) => {
    const child = execFile('kcat', [...options, ...args], { timeout: 60_000 }, (error, stdout, stderr) => resolve(error ? { ok: false, out: `${stderr}${stdout}` } : { ok: true, out: stdout }));
    child.stdin?.end(input ?? '');
  });
}

/** A connection to `broker` (TLS without checking the certificate when asked), once connected or closed. */
function rawConnection(broker: string, options: { tls?: boolean } = {}): Promise<Socket> {
  const [host, port] = broker.split(':') as [string, string];
  return new Promise((resolve) => {
    const socket: Socket = options.tls ? tlsConnect({ host, port: Number(port), rejectUnauthorized: false }, () => resolve(socket)) : tcpConnect({ host, port: Number(port) }, () => resolve(socket));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(socket));
  });
}

/** Whether `socket` is closed by the other end within `ms`. */
function closedWithin(socket: Socket, ms: number): Promise<boolean> {
  if (socket.destroyed || socket.readyState === 'closed') return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

describe('the Kafka listener with SASL and TLS', () => {
  const directory = temporaryDirectory('kafka-security');
  let cluster: LocalCluster | null = null;
  const tokensFile = join(directory.path, 'tokens.json');

  afterAll(async () => {
    await cluster?.stop();
    directory.remove();
  });

  it('authenticates kafkajs and librdkafka with PLAIN and SCRAM, enforces the scopes, over TCP and over TLS', async () => {
    writeFileSync(tokensFile, JSON.stringify({ tokens: Object.values(TOKENS) }), { mode: 0o600 });
    // The CA and loopback certificate `mink up --secure` makes for the Kafka listeners.
    const { certFile, keyFile, caFile } = await ensureServerTlsFiles(join(directory.path, 'secrets'), 'kafka', LOCAL_CERTIFICATE_NAMES);
    const dataDir = join(directory.path, 'cluster');
    cluster = await LocalCluster.start({ ...ONE_NODE_CLUSTER, dataDir, env: { MINK_AUTH_TOKENS_FILE: tokensFile } });
    const brokers = kafkaBrokersOf(cluster);
    const kafkaOf = (auth: SASLOptions | undefined, ssl?: { ca: Buffer }) =>
      new Kafka({ clientId: 'kafka-security-e2e', brokers, logLevel: logLevel.NOTHING, retry: { retries: 2, initialRetryTime: 100 }, connectionTimeout: 5_000, ...(auth ? { sasl: auth } : {}), ...(ssl ? { ssl } : {}) });

    // No SASL: the listener answers ApiVersions and closes the connection on Metadata; kafkajs gives up.
    const anonymous = kafkaOf(undefined).admin();
    await expect(anonymous.connect().then(() => anonymous.listTopics())).rejects.toThrow();
    await anonymous.disconnect();
    // A wrong secret: SASL_AUTHENTICATION_FAILED.
    const wrong = kafkaOf(sasl('scram-sha-256', 'ops', 'ops-secret-00000000000000X')).admin();
    await expect(wrong.connect()).rejects.toMatchObject({ name: 'KafkaJSSASLAuthenticationError' });
    await wrong.disconnect();

    // The admin token (PLAIN) creates the topics; the table-limited writer may not (TOPIC_AUTHORIZATION_FAILED).
    const admin = kafkaOf(sasl('plain', 'ops')).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'clicks', numPartitions: 2 }, { topic: 'orders', numPartitions: 1 }], waitForLeaders: true });
    const writerAdmin = kafkaOf(sasl('scram-sha-256', 'writer')).admin();
    await writerAdmin.connect();
    await expect(writerAdmin.createTopics({ topics: [{ topic: 'sneaky', numPartitions: 1 }] })).rejects.toMatchObject({ errors: [expect.objectContaining({ type: 'TOPIC_AUTHORIZATION_FAILED' })] });
    // The writer limited to 'clicks' sees that topic only.
    expect(await writerAdmin.listTopics()).toEqual(['clicks']);
    await writerAdmin.disconnect();

    // The writer (SCRAM-SHA-256) produces to clicks, idempotently; to orders it is refused.
    const writer = kafkaOf(sasl('scram-sha-256', 'writer')).producer({ idempotent: true, retry: { retries: 2 } });
    await writer.connect();
    const values = Array.from({ length: 20 }, (_, index) => `click-${index}`);
    await eventually('the first produce to clicks', () => writer.send({ topic: 'clicks', acks: -1, messages: values.slice(0, 1).map((value) => ({ key: value, value })) }));
    await writer.send({ topic: 'clicks', acks: -1, messages: values.slice(1).map((value) => ({ key: value, value })) });
    // (Refused at its Metadata already: the topic is one it may not see.)
    await expect(writer.send({ topic: 'orders', acks: -1, messages: [{ value: 'nope' }] })).rejects.toThrow('Not authorized to access topics: [Topic authorization failed]');
    await writer.disconnect();
    const highWatermarks = async () => (await admin.fetchTopicOffsets('clicks')).map((partition) => Number(partition.high));
    expect((await highWatermarks()).reduce((sum, high) => sum + high, 0)).toBe(values.length);

    // The read-only token (SCRAM-SHA-512) may not produce: TOPIC_AUTHORIZATION_FAILED, nothing stored.
    const readerProducer = kafkaOf(sasl('scram-sha-512', 'reader')).producer({ retry: { retries: 1 } });
    await readerProducer.connect();
    await expect(readerProducer.send({ topic: 'clicks', acks: -1, messages: [{ value: 'forbidden' }] })).rejects.toThrow('Not authorized to access topics: [Topic authorization failed]');
    await readerProducer.disconnect();

    // It consumes in a group: every record the writer produced, and nothing else.
    const consumed: string[] = [];
    const consumer = kafkaOf(sasl('scram-sha-512', 'reader')).consumer({ groupId: 'security-readers' });
    await consumer.connect();
    await consumer.subscribe({ topic: 'clicks', fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void consumed.push(message.value!.toString()) });
    await eventually('the reader consumed every click', () => consumed.length >= values.length);
    await consumer.disconnect();
    expect([...consumed].sort()).toEqual([...values].sort());

    // librdkafka (kcat): SCRAM-SHA-512 and PLAIN consume everything; without SASL no metadata; a read token producing is refused.
    const plaintextSasl = (who: TokenName, mechanism: string) => ({ 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanisms': mechanism, 'sasl.username': TOKENS[who].name, 'sasl.password': TOKENS[who].token });
    for (const mechanism of ['SCRAM-SHA-512', 'PLAIN']) {
      const read = await kcat(['-b', brokers[0]!, '-C', '-t', 'clicks', '-o', 'beginning', '-e', '-q', '-f', '%s\\n'], plaintextSasl('reader', mechanism));
      expect([mechanism, read.ok ? 'ok' : read.out, read.out.split('\n').filter(Boolean).sort()]).toEqual([mechanism, 'ok', [...values].sort()]);
    }
    const noSasl = await kcat(['-b', brokers[0]!, '-L', '-m', '5'], {});
    expect(noSasl.ok).toBe(false);
    const refused = await kcat(['-b', brokers[0]!, '-P', '-t', 'clicks', '-p', '0'], { ...plaintextSasl('reader', 'SCRAM-SHA-256'), 'message.timeout.ms': '10000' }, 'forbidden\n');
    expect(refused.out).toMatch(/Topic authorization failed/i);
    expect((await highWatermarks()).reduce((sum, high) => sum + high, 0)).toBe(values.length);

    // TLS: the data node restarted with a certificate speaks SASL over TLS only.
    const dataNode = cluster.processes().find((entry) => entry.role === 'data-node')!.nodeId;
    await cluster.restart('data-node', dataNode, { env: { MINK_KAFKA_TLS_CERT_FILE: certFile, MINK_KAFKA_TLS_KEY_FILE: keyFile } });
    const tlsBrokers = kafkaBrokersOf(cluster);
    const ca = readFileSync(caFile);
    const tlsKafka = new Kafka({ clientId: 'kafka-security-e2e', brokers: tlsBrokers, logLevel: logLevel.NOTHING, ssl: { ca: [ca] }, sasl: sasl('scram-sha-512', 'ops'), retry: { retries: 2 } });
    const tlsProducer = tlsKafka.producer({ idempotent: true });
    await tlsProducer.connect();
    await eventually('a produce over TLS', () => tlsProducer.send({ topic: 'orders', acks: -1, messages: [{ key: 'o1', value: 'order-1' }] }));
    await tlsProducer.disconnect();
    const tlsRead = await kcat(['-b', tlsBrokers[0]!, '-C', '-t', 'orders', '-o', 'beginning', '-e', '-q', '-f', '%s\\n'], {
      'security.protocol': 'SASL_SSL', 'ssl.ca.location': caFile, 'sasl.mechanisms': 'SCRAM-SHA-256', 'sasl.username': TOKENS.reader.name, 'sasl.password': TOKENS.reader.token,
    });
    expect([tlsRead.ok, tlsRead.out.trim()]).toEqual([true, 'order-1']);
    // Plain TCP to the TLS listener gets nowhere, nor does TLS without trusting the certificate.
    const plainToTls = kafkaOf(sasl('plain', 'ops')).admin();
    await expect(plainToTls.connect().then(() => plainToTls.listTopics())).rejects.toThrow();
    await plainToTls.disconnect();
    const untrusted = await kcat(['-b', tlsBrokers[0]!, '-L', '-m', '5'], { 'security.protocol': 'SASL_SSL', 'sasl.mechanisms': 'PLAIN', 'sasl.username': 'ops', 'sasl.password': TOKENS.ops.token });
    expect(untrusted.ok).toBe(false);
    await admin.disconnect();

    // Abuse, bounded: a flood of connections from one address past the per-address cap (the ones past it are closed
    // at once), a frame announcing 1 GiB (closed), a sender stuck halfway through a frame; the listener still serves.
    const flood = await Promise.all(Array.from({ length: LIMITS.kafkaConnectionsPerAddressMax + 40 }, () => rawConnection(tlsBrokers[0]!, { tls: true })));
    const refusedCount = (await Promise.all(flood.map((socket) => closedWithin(socket, 2_000)))).filter(Boolean).length;
    expect(refusedCount).toBeGreaterThanOrEqual(40);
    const oversized = await rawConnection(tlsBrokers[0]!, { tls: true });
    oversized.write(Buffer.from([0x40, 0, 0, 0]));
    expect(await closedWithin(oversized, 5_000)).toBe(true);
    const halfway = await rawConnection(tlsBrokers[0]!, { tls: true });
    halfway.write(Buffer.from([0, 0, 0, 100, 0, 18]));
    for (const socket of flood) socket.destroy();
    const afterAbuse = new Kafka({ clientId: 'kafka-security-e2e', brokers: tlsBrokers, logLevel: logLevel.NOTHING, ssl: { ca: [ca] }, sasl: sasl('plain', 'ops'), retry: { retries: 5 } }).admin();
    await eventually('the listener serves after the abuse', () => afterAbuse.connect().then(() => afterAbuse.listTopics()));
    expect(await afterAbuse.listTopics()).toEqual(expect.arrayContaining(['clicks', 'orders']));
    await afterAbuse.disconnect();
    halfway.destroy();

    // TLS with a certificate the data node issues itself at start, signed by the CA it is given (what the compose
    // stack's replicas do): kafkajs and librdkafka trusting only the CA check it against the advertised address.
    const caKeyFile = join(directory.path, 'secrets', tlsFilesOf('kafka').caKey);
    await cluster.restart('data-node', dataNode, { env: { MINK_KAFKA_TLS_CERT_FILE: '', MINK_KAFKA_TLS_KEY_FILE: '', MINK_KAFKA_TLS_CA_FILE: caFile, MINK_KAFKA_TLS_CA_KEY_FILE: caKeyFile, MINK_KAFKA_TLS_EXTRA_NAMES: 'localhost' } });
    const issuedBrokers = kafkaBrokersOf(cluster);
    const issuedProducer = new Kafka({ clientId: 'kafka-security-e2e', brokers: issuedBrokers, logLevel: logLevel.NOTHING, ssl: { ca: [ca] }, sasl: sasl('scram-sha-256', 'ops'), retry: { retries: 2 } }).producer({ idempotent: true });
    await issuedProducer.connect();
    await eventually('a produce over TLS with the issued certificate', () => issuedProducer.send({ topic: 'orders', acks: -1, messages: [{ key: 'o2', value: 'order-2' }] }));
    await issuedProducer.disconnect();
    const issuedRead = await kcat(['-b', issuedBrokers[0]!.replace('127.0.0.1', 'localhost'), '-C', '-t', 'orders', '-o', 'beginning', '-e', '-q', '-f', '%s\\n'], {
      'security.protocol': 'SASL_SSL', 'ssl.ca.location': caFile, 'ssl.endpoint.identification.algorithm': 'https', 'sasl.mechanisms': 'SCRAM-SHA-512', 'sasl.username': TOKENS.reader.name, 'sasl.password': TOKENS.reader.token,
    });
    expect([issuedRead.ok, issuedRead.out.split('\n').filter(Boolean)]).toEqual([true, ['order-1', 'order-2']]);

    // No secret in any log (the failed exchanges were logged, by reason only).
    await cluster.stop();
    cluster = null;
    const logDir = join(dataDir, 'logs');
    const logs = readdirSync(logDir).map((name) => readFileSync(join(logDir, name), 'utf8')).join('');
    expect(logs).toMatch(/a Kafka SASL authentication failed/);
    expect(logs).toMatch(/"names":\["IP:127.0.0.1","DNS:[^"]+","DNS:localhost"\].*issued the Kafka listener's TLS certificate/);
    const caKey = readFileSync(caKeyFile, 'utf8').split('\n').filter((line) => line !== '' && !line.startsWith('-----'));
    for (const line of caKey) expect(logs.includes(line)).toBe(false);
    for (const token of Object.values(TOKENS)) expect(logs.includes(token.token)).toBe(false);
    expect(logs.includes('ops-secret-00000000000000X')).toBe(false);
  });
});
