import { mkdtempSync, readFileSync, rmSync, existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, StringCodec } from 'nats';
import { findNatsServer, NATS_SERVER_NOT_FOUND_MESSAGE, natsConnectionOutcome, natsServerConfig, startNatsServer, type NatsServerHandle } from './nats-server';
import { isPortOpen } from './ports';

const codec = StringCodec();

describe('startNatsServer', () => {
  let dataDir: string;
  let server: NatsServerHandle | undefined;

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-nats-'));
  });

  afterEach(async () => {
    await server?.stop();
    server = undefined;
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts a JetStream server that accepts a connection, a request/reply and a stream publish, and stops it', async () => {
    // Proves the launcher returns only once the server serves clients, with JetStream on and its files in dataDir.
    server = await startNatsServer({ dataDir, logFile: join(dataDir, 'nats.log') });
    expect(server.url).toBe(`nats://127.0.0.1:${server.port}`);
    expect(server.port).not.toBe(4222);

    const connection = await connect({ servers: server.url });
    const subscription = connection.subscribe('echo', {
      callback: (_error, message) => message.respond(codec.encode(`echo ${codec.decode(message.data)}`)),
    });
    const reply = await connection.request('echo', codec.encode('hello'), { timeout: 2_000 });
    expect(codec.decode(reply.data)).toBe('echo hello');

    const manager = await connection.jetstreamManager();
    await manager.streams.add({ name: 'PROBE', subjects: ['probe.>'] });
    const ack = await connection.jetstream().publish('probe.one', codec.encode('x'));
    expect(ack).toMatchObject({ stream: 'PROBE', seq: 1, duplicate: false });
    expect(existsSync(join(dataDir, 'jetstream'))).toBe(true);
    subscription.unsubscribe();
    await connection.close();

    const { port } = server;
    await server.stop();
    expect(server.process.exitCode !== null || server.process.signalCode !== null).toBe(true);
    expect(await isPortOpen('127.0.0.1', port)).toBe(false);
  });

  it('keeps JetStream streams across a restart on the same directory', async () => {
    // Proves a restarted server (e.g. `mink up` again) finds the metadata log it had before.
    server = await startNatsServer({ dataDir });
    let connection = await connect({ servers: server.url });
    await (await connection.jetstreamManager()).streams.add({ name: 'KEEP', subjects: ['keep'] });
    await connection.jetstream().publish('keep', codec.encode('first'));
    await connection.close();
    await server.stop();

    server = await startNatsServer({ dataDir });
    connection = await connect({ servers: server.url });
    const message = await (await connection.jetstreamManager()).streams.getMessage('KEEP', { seq: 1 });
    expect(codec.decode(message.data)).toBe('first');
    await connection.close();
  });

  it('asks every client for the credentials it was given: none or a wrong password is an authorization violation', async () => {
    // Proves a secure single server refuses anonymous clients, and that the launcher's own readiness check passes the credentials.
    const credentials = { user: 'mink', password: 'beef0123456789abcdef' };
    server = await startNatsServer({ dataDir, credentials, logFile: join(dataDir, 'nats.log') });
    expect(await natsConnectionOutcome(server.url)).toBe('AUTHORIZATION_VIOLATION');
    expect(await natsConnectionOutcome(server.url, { user: 'mink', pass: 'wrong' })).toBe('AUTHORIZATION_VIOLATION');
    expect(await natsConnectionOutcome(server.url, { user: 'mink', pass: credentials.password })).toBe('connected');
    expect(natsServerConfig(credentials)).toBe(`max_payload: 8388608\nauthorization {\n  user: "mink"\n  password: "${credentials.password}"\n}\n`);
    expect(natsServerConfig()).toBe('max_payload: 8388608\n');
    expect((statSync(join(dataDir, 'nats-server.conf')).mode & 0o777).toString(8)).toBe('600');
    expect(readFileSync(`/proc/${server.pid}/cmdline`, 'utf8')).not.toContain(credentials.password);
  });

  it('writes the users of a secure cluster with their permissions and a TLS block, and refuses a launcher user that is not one of them', () => {
    // Proves the config of a server with per-identity users: the launcher checks with one of them, and TLS names the certificate and key.
    const admin = { user: 'mink-admin', password: 'beef0123456789abcdef' };
    const users = [{ credentials: admin, permissions: { publish: ['$JS.API.INFO'], subscribe: ['_INBOX.>'] } }];
    const tls = { certFile: '/certs/nats.crt', keyFile: '/certs/nats.key', caFile: '/certs/ca.crt' };
    const config = natsServerConfig(admin, { users, tls });
    expect(config).toContain('authorization {\n  users: [\n    {\n      user: "mink-admin"\n');
    expect(config).toContain('        publish: { allow: ["$JS.API.INFO"] }\n        subscribe: { allow: ["_INBOX.>"] }\n');
    expect(config).toContain('tls {\n  cert_file: "/certs/nats.crt"\n  key_file: "/certs/nats.key"\n}\n');
    expect(config).not.toContain('/certs/ca.crt');
    expect(() => natsServerConfig({ user: 'someone-else', password: 'beef0123456789abcdef' }, { users })).toThrow("the launcher's NATS user 'someone-else' is not one of the server's users");
  });

  it('names the missing binary in one line with the install hint', () => {
    // Proves a machine without nats-server gets an actionable message instead of a spawn error.
    expect(() => findNatsServer([join(dataDir, 'no-such-nats-server')])).toThrow(new Error(NATS_SERVER_NOT_FOUND_MESSAGE));
    expect(NATS_SERVER_NOT_FOUND_MESSAGE).toBe('nats-server not found: install it (Debian: apt-get install nats-server)');
  });
});
