import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseBindHost } from './options';
import type { LocalCluster, LocalClusterOptions } from '@mink/devcluster';
import type { CliIo } from './io';
import { run } from './program';
import { clusterOptionsFromFlags, parseNatsCluster, printEndpoints, type UpFlags } from './up-command';

const FLAGS: UpFlags = {
  nodes: 3,
  coordinators: 2,
  tieringWorkers: 1,
  dataDir: '.mink',
  gatewayPort: 8080,
  gatewayHost: '127.0.0.1',
  grpcPort: 50051,
  kafkaPort: 9092,
  leaseTtl: 30_000,
  coordinatorTick: 5_000,
  logLevel: 'info',
};

/** What printEndpoints reads of a LocalCluster: one nats-server, one data node, a plain gateway; `changes` replace any of it. */
function fakeCluster(changes: Record<string, unknown>): LocalCluster {
  return {
    processes: () => [{ role: 'nats', nodeId: null, ports: { client: 4301 } }, { role: 'data-node', nodeId: '1', ports: { http: 9000, kafka: 9092 } }],
    gatewayUrl: 'http://127.0.0.1:8080',
    gatewayGrpcAddress: '127.0.0.1:50051',
    natsUrl: 'nats://127.0.0.1:4301',
    s3Endpoint: 'http://127.0.0.1:9999',
    s3Bucket: 'mink',
    dataDir: '/data',
    clusterFile: '/data/cluster.json',
    logDir: '/data/logs',
    ...changes,
  } as unknown as LocalCluster;
}

describe('mink up options', () => {
  it('runs no process under the profiler unless asked', () => {
    // Proves profiling is opt-in: without --cpu-prof the cluster options carry no profile folder.
    expect(clusterOptionsFromFlags(FLAGS)).not.toHaveProperty('cpuProfileDir');
  });

  it('passes --cpu-prof to every process as an absolute folder', () => {
    // Proves the flag reaches LocalCluster, resolved against the working directory like --data-dir.
    expect(clusterOptionsFromFlags({ ...FLAGS, cpuProf: 'profiles' })).toMatchObject({ cpuProfileDir: resolve('profiles'), dataDir: resolve('.mink') });
  });

  it('binds the gateway to loopback unless --gateway-host says otherwise', () => {
    // Proves secure by default reaches the cluster options: only an explicit flag widens the gateway's address.
    expect(clusterOptionsFromFlags(FLAGS)).toMatchObject({ gatewayBindHost: '127.0.0.1' });
    expect(clusterOptionsFromFlags({ ...FLAGS, gatewayHost: '0.0.0.0' })).toMatchObject({ gatewayBindHost: '0.0.0.0' });
  });

  it.each(['localhost', '', '300.1.1.1', 'every'])('refuses --gateway-host %p: an IP address is needed', (value) => {
    expect(() => parseBindHost(value)).toThrow('expected an IP address to bind');
  });

  it('asks for bearer tokens only with --auth-tokens, passing the file to the services as an absolute path', () => {
    expect(clusterOptionsFromFlags(FLAGS)).not.toHaveProperty('env');
    expect(clusterOptionsFromFlags({ ...FLAGS, authTokens: 'tokens.json' })).toMatchObject({ env: { MINK_AUTH_TOKENS_FILE: resolve('tokens.json') } });
  });

  it('passes --grpc-port to the cluster: 50051 by default, 0 for a free port', async () => {
    // Proves the gateway's gRPC port reaches LocalCluster from the command line, with DESIGN's default.
    expect(clusterOptionsFromFlags(FLAGS)).toMatchObject({ grpcPort: 50051 });
    const started: LocalClusterOptions[] = [];
    const io: CliIo = { writeOut: () => undefined, writeError: () => undefined, env: {}, fetch: async () => new Response(null) };
    for (const args of [['up'], ['up', '--grpc-port', '0']]) {
      await run(args, io, async (options) => {
        started.push(options);
        throw new Error('not started in this test');
      });
    }
    expect(started.map((options) => options.grpcPort)).toEqual([50051, 0]);
  });

  it('starts a secure cluster only with --secure, and gives the gateway a certificate only with --tls-cert and --tls-key', () => {
    // Proves the default stays the open cluster, and both flags reach LocalCluster with absolute paths.
    expect(clusterOptionsFromFlags(FLAGS)).not.toHaveProperty('secure');
    expect(clusterOptionsFromFlags(FLAGS)).not.toHaveProperty('tls');
    expect(clusterOptionsFromFlags({ ...FLAGS, secure: true, tlsCert: 'gw.crt', tlsKey: 'gw.key' })).toMatchObject({
      secure: true,
      tls: { certFile: resolve('gw.crt'), keyFile: resolve('gw.key') },
    });
  });

  it('refuses --tls-cert without --tls-key before starting anything, and exits 2', async () => {
    let stderr = '';
    const io: CliIo = { writeOut: () => undefined, writeError: (text) => void (stderr += text), env: {}, fetch: async () => new Response(null) };
    const started: LocalClusterOptions[] = [];
    const exitCode = await run(['up', '--tls-cert', 'gw.crt'], io, async (options) => {
      started.push(options);
      throw new Error('not started in this test');
    });
    expect({ exitCode, stderr, started }).toEqual({ exitCode: 2, stderr: 'error: --tls-cert and --tls-key go together: the certificate and its private key\n', started: [] });
  });

  it('prints where the secrets of a secure cluster are and how to use them, never a secret', () => {
    // Proves `mink up --secure --tls-cert …` tells the user the files to read, and that the gateway speaks https.
    let stdout = '';
    const io: CliIo = { writeOut: (text) => void (stdout += text), writeError: () => undefined, env: {}, fetch: async () => new Response(null) };
    const cluster = fakeCluster({ gatewayUrl: 'https://127.0.0.1:8080', natsEnvFile: '/data/secrets/nats.env', natsTlsCaFile: '/data/secrets/nats-ca.pem', adminTokenFile: '/data/secrets/admin-token' });
    printEndpoints(io, cluster, { ...FLAGS, secure: true, tlsCert: '/certs/gw.crt', tlsKey: '/certs/gw.key' });
    expect(stdout.split('\n').slice(3, 13)).toEqual([
      '  gateway       https://127.0.0.1:8080',
      '  grpc          127.0.0.1:50051 (mink.v1.Mink, grpc.health.v1, reflection)',
      '  console       https://127.0.0.1:8080/console',
      '  nats          nats://127.0.0.1:4301',
      '                user and password in /data/secrets/nats.env (MINK_NATS_USER, MINK_NATS_PASSWORD: set -a; . /data/secrets/nats.env; set +a)',
      '                TLS: trust the CA in /data/secrets/nats-ca.pem (MINK_NATS_TLS_CA_FILE; MinkClient.connect({ tls: { caFile } }))',
      '  s3            http://127.0.0.1:9999 (bucket mink, path-style, credentials S3RVER/S3RVER)',
      '  token         admin token in /data/secrets/admin-token: MINK_TOKEN=$(cat /data/secrets/admin-token) mink table list',
      "  tls           /certs/gw.crt; MINK_GATEWAY_URL=https://127.0.0.1:8080 (add MINK_TLS_CA_FILE=<the CA's PEM> for a self-signed or private CA)",
      `  kafka         127.0.0.1:9092 (node 1); SASL_SSL (trust ${resolve('.mink', 'secrets', 'kafka-ca.pem')}), PLAIN or SCRAM-SHA-256/512, user admin, password $(cat /data/secrets/admin-token)`,
    ]);
    expect(stdout.split('\n')[2]).toMatch(/^secured: NATS asks every process/);
  });

  it('--secure makes a CA and a loopback certificate for NATS and for Kafka in <data-dir>/secrets and starts the servers with them, the same ones again at the next start', async () => {
    // Proves `mink up --secure` turns TLS to NATS and on the Kafka listeners on: the cluster gets natsTls and the
    // data nodes MINK_KAFKA_TLS_*, whose certificates their CAs verify for 127.0.0.1.
    const dataDir = mkdtempSync(join(tmpdir(), 'mink-up-secure-'));
    try {
      const io: CliIo = { writeOut: () => undefined, writeError: () => undefined, env: {}, fetch: async () => new Response(null) };
      const started: LocalClusterOptions[] = [];
      const record = async (options: LocalClusterOptions): Promise<LocalCluster> => {
        started.push(options);
        throw new Error('not started in this test');
      };
      for (let start = 0; start < 2; start++) await run(['up', '--secure', '--data-dir', dataDir], io, record);
      const secrets = join(dataDir, 'secrets');
      expect(started.map((options) => options.natsTls)).toEqual([0, 1].map(() => ({ caFile: join(secrets, 'nats-ca.pem'), certFile: join(secrets, 'nats-server.pem'), keyFile: join(secrets, 'nats-server-key.pem') })));
      execFileSync('openssl', ['verify', '-CAfile', join(secrets, 'nats-ca.pem'), '-verify_ip', '127.0.0.1', join(secrets, 'nats-server.pem')]);
      expect(started.map((options) => [options.env?.MINK_KAFKA_TLS_CERT_FILE, options.env?.MINK_KAFKA_TLS_KEY_FILE])).toEqual([0, 1].map(() => [join(secrets, 'kafka-server.pem'), join(secrets, 'kafka-server-key.pem')]));
      execFileSync('openssl', ['verify', '-CAfile', join(secrets, 'kafka-ca.pem'), '-verify_ip', '127.0.0.1', join(secrets, 'kafka-server.pem')]);
      // Two CAs: a NATS client's CA does not vouch for a Kafka listener.
      expect(() => execFileSync('openssl', ['verify', '-CAfile', join(secrets, 'nats-ca.pem'), join(secrets, 'kafka-server.pem')], { stdio: 'ignore' })).toThrow();
      expect(statSync(join(secrets, 'nats-server-key.pem')).mode & 0o777).toBe(0o600);
      // Without --secure: no TLS.
      await run(['up', '--data-dir', dataDir], io, record);
      expect(started[2]).not.toHaveProperty('natsTls');
      expect(started[2]!.env?.MINK_KAFKA_TLS_CERT_FILE).toBeUndefined();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('passes --tiering-workers to the cluster', () => {
    expect(clusterOptionsFromFlags({ ...FLAGS, tieringWorkers: 2 })).toMatchObject({ tieringWorkers: 2 });
  });
});

describe('mink up --nats-cluster', () => {
  it.each([
    ['1', 1],
    ['3', 3],
    ['5', 5],
    [' 3 ', 3],
  ])('takes %p nats-servers', (text, servers) => {
    expect(parseNatsCluster(text)).toBe(servers);
  });

  it.each(['0', '2', '4', '6', '7', 'three', '-3', '3.0'])('refuses %p: 1, or an odd count from 3 to 5', (text) => {
    // Proves even counts are refused with the reason: JetStream needs a majority, so they survive no more failures than one server fewer.
    expect(() => parseNatsCluster(text)).toThrow('expected 1 (one nats-server) or an odd count from 3 to 5: JetStream needs a majority of its servers');
  });

  it('passes the count to the cluster, one server by default', () => {
    expect(clusterOptionsFromFlags(FLAGS)).toMatchObject({ natsCluster: 1 });
    expect(clusterOptionsFromFlags({ ...FLAGS, natsCluster: 3 })).toMatchObject({ natsCluster: 3 });
  });

  it('refuses --nats-port with --nats-cluster 3 before starting anything, and exits 2', async () => {
    let stdout = '';
    let stderr = '';
    const io: CliIo = { writeOut: (text) => void (stdout += text), writeError: (text) => void (stderr += text), env: {}, fetch: async () => new Response(null) };
    const started: LocalClusterOptions[] = [];
    const exitCode = await run(['up', '--nats-cluster', '3', '--nats-port', '4301'], io, async (options) => {
      started.push(options);
      throw new Error('not started in this test');
    });
    expect({ exitCode, stdout, stderr, started }).toEqual({
      exitCode: 2,
      stdout: '',
      stderr: 'error: --nats-port sets the port of a single nats-server; with --nats-cluster every server gets a free port\n',
      started: [],
    });
  });

  it('prints every NATS URL of a cluster, with its server name and monitoring endpoint, and the MINK_NATS_URL value', () => {
    // Proves a user of `mink up --nats-cluster 3` sees where each server listens and what to give a client.
    let stdout = '';
    const io: CliIo = { writeOut: (text) => void (stdout += text), writeError: () => undefined, env: {}, fetch: async () => new Response(null) };
    const nats = [1, 2, 3].map((index) => ({ role: 'nats', nodeId: `nats-${index}`, ports: { client: 4300 + index, cluster: 6300 + index, monitor: 8300 + index } }));
    const cluster = fakeCluster({
      processes: () => [...nats, { role: 'data-node', nodeId: '1', ports: { http: 9000, kafka: 9092 } }],
      natsUrl: 'nats://127.0.0.1:4301,nats://127.0.0.1:4302,nats://127.0.0.1:4303',
    });
    printEndpoints(io, cluster, { ...FLAGS, natsCluster: 3 });
    expect(stdout.split('\n').slice(0, 10)).toEqual([
      '',
      'mink is up: 2 coordinator(s), 3 data node(s), a gateway and 1 tiering worker(s), 3 clustered nats-servers',
      'not secured: nothing asks for credentials (every service listens on loopback only); --secure turns authentication on',
      '  gateway       http://127.0.0.1:8080',
      '  grpc          127.0.0.1:50051 (mink.v1.Mink, grpc.health.v1, reflection)',
      '  console       http://127.0.0.1:8080/console',
      '  nats          nats://127.0.0.1:4301 (nats-1, monitoring http://127.0.0.1:8301/jsz)',
      '                nats://127.0.0.1:4302 (nats-2, monitoring http://127.0.0.1:8302/jsz)',
      '                nats://127.0.0.1:4303 (nats-3, monitoring http://127.0.0.1:8303/jsz)',
      '                MINK_NATS_URL=nats://127.0.0.1:4301,nats://127.0.0.1:4302,nats://127.0.0.1:4303 (JetStream cluster, 3 replicas)',
    ]);
  });
});
