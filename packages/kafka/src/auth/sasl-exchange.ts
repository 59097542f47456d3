import { createHash, createHmac, pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto';
import { tokenNamed, tokenOfPassword, type AccessPolicy, type IssuedToken } from '@mink/protocol';

/**
 * The server side of the SASL mechanisms of the Kafka listener, against the gateway's tokens: the user name is
 * a token's `name`, the password its secret.
 *
 * - PLAIN (RFC 4616): one message `[authzid] NUL user NUL password`.
 * - SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677; KIP-84): client-first, server-first, client-final,
 *   server-final. The salted keys of each token are derived once per process (4 096 iterations, Kafka's and
 *   the clients' minimum) with a random salt, so no SCRAM credentials need storing anywhere. An unknown user
 *   gets a server-first message like any other and fails at the proof, so the exchange tells nothing of which
 *   names exist. Channel binding, and Kafka's delegation-token extension, are refused.
 *
 * A failed exchange says only that authentication failed; the reason goes to the log line of the caller.
 */
export const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

export function isSaslMechanism(name: string): name is SaslMechanism {
  return (SASL_MECHANISMS as readonly string[]).includes(name);
}

/** What one step of an exchange gives: bytes for the client and, once the client has proved who it is, its token. */
export type SaslStep = { kind: 'continue'; reply: Buffer } | { kind: 'authenticated'; reply: Buffer; token: IssuedToken } | { kind: 'failed'; reason: string };

export interface SaslExchange {
  step(message: Uint8Array): Promise<SaslStep>;
}

/** The exchange of `mechanism` against the tokens of `policy`. */
export function saslExchangeOf(mechanism: SaslMechanism, policy: AccessPolicy, keys: ScramKeyStore, serverNonce: () => string = () => randomBytes(18).toString('base64')): SaslExchange {
  return mechanism === 'PLAIN' ? new PlainExchange(policy) : new ScramExchange(mechanism === 'SCRAM-SHA-256' ? 'sha256' : 'sha512', policy, keys, serverNonce);
}

class PlainExchange implements SaslExchange {
  private done = false;

  constructor(private readonly policy: AccessPolicy) {}

  async step(message: Uint8Array): Promise<SaslStep> {
    if (this.done) return { kind: 'failed', reason: 'PLAIN takes one message' };
    this.done = true;
    const parsed = parsePlainMessage(Buffer.from(message));
    if ('refused' in parsed) return { kind: 'failed', reason: parsed.refused };
    const token = tokenOfPassword(this.policy, parsed.user, parsed.password);
    if (token === null) return { kind: 'failed', reason: `no token '${parsed.user}' with that secret` };
    return { kind: 'authenticated', reply: Buffer.alloc(0), token };
  }
}

/** The parts of a PLAIN message, or why it is refused; an authorization id other than the user is refused. */
export function parsePlainMessage(message: Buffer): { user: string; password: string } | { refused: string } {
  const parts = message.toString('utf8').split('\u0000');
  if (parts.length !== 3) return { refused: 'a PLAIN message is [authzid] NUL user NUL password' };
  const [authzid, user, password] = parts as [string, string, string];
  if (user === '' || password === '') return { refused: 'a PLAIN message needs a user and a password' };
  if (authzid !== '' && authzid !== user) return { refused: 'acting for another user (a PLAIN authzid) is not supported' };
  return { user, password };
}

/** The keys a SCRAM server keeps of one password (RFC 5802 §3). */
export interface ScramKeys {
  salt: Buffer;
  iterations: number;
  storedKey: Buffer;
  serverKey: Buffer;
}

export type ScramHash = 'sha256' | 'sha512';

export const SCRAM_ITERATIONS = 4096;

/** SaltedPassword = Hi(password, salt, i); ClientKey, StoredKey = H(ClientKey), ServerKey. */
export async function scramKeysOf(password: string, hash: ScramHash, salt: Buffer, iterations: number): Promise<ScramKeys> {
  const length = hash === 'sha256' ? 32 : 64;
  const salted = await new Promise<Buffer>((resolve, reject) => pbkdf2(password, salt, iterations, length, hash, (error, key) => (error ? reject(error) : resolve(key))));
  const clientKey = hmac(hash, salted, 'Client Key');
  return { salt, iterations, storedKey: createHash(hash).update(clientKey).digest(), serverKey: hmac(hash, salted, 'Server Key') };
}

/** The SCRAM keys of each token, derived on first use with a salt of this process. */
export class ScramKeyStore {
  private readonly keys = new Map<string, Promise<ScramKeys>>();
  /** Salts the fake keys of unknown users, so their salt is stable within the process and tells nothing. */
  private readonly unknownUserSecret = randomBytes(32);

  constructor(private readonly newSalt: () => Buffer = () => randomBytes(16)) {}

  /** The keys of `token` for `hash`. */
  keysOf(token: IssuedToken, hash: ScramHash): Promise<ScramKeys> {
    const key = `${hash}\u0000${token.name}`;
    let found = this.keys.get(key);
    if (found === undefined) {
      found = scramKeysOf(token.secret, hash, this.newSalt(), SCRAM_ITERATIONS);
      this.keys.set(key, found);
    }
    return found;
  }

  /** Keys no proof matches, with a salt that looks like any other, for a user name no token has. */
  unknownUserKeys(name: string, hash: ScramHash): ScramKeys {
    const salt = hmac('sha256', this.unknownUserSecret, name).subarray(0, 16);
    return { salt, iterations: SCRAM_ITERATIONS, storedKey: randomBytes(hash === 'sha256' ? 32 : 64), serverKey: randomBytes(hash === 'sha256' ? 32 : 64) };
  }
}

/** The fields of a client-first message, or why it is refused. */
export function parseScramClientFirst(text: string): { gs2Header: string; user: string; clientNonce: string; bare: string } | { refused: string } {
  const match = /^([ny]),(?:a=[^,]*)?,(.*)$/.exec(text);
  if (match === null) return { refused: text.startsWith('p=') ? 'SCRAM channel binding is not supported' : 'a SCRAM client-first message starts with the GS2 header "n,,"' };
  const bare = match[2]!;
  const gs2Header = text.slice(0, text.length - bare.length);
  const attributes = scramAttributes(bare);
  if (attributes === null || !attributes.has('n') || !attributes.has('r')) return { refused: 'a SCRAM client-first message has n= and r=' };
  if (bare.startsWith('m=')) return { refused: 'SCRAM mandatory extensions are not supported' };
  if (attributes.has('tokenauth')) return { refused: 'Kafka delegation tokens are not supported' };
  const user = unescapeScramName(attributes.get('n')!);
  const clientNonce = attributes.get('r')!;
  if (user === null || user === '' || clientNonce === '') return { refused: 'a SCRAM client-first message has a user and a nonce' };
  return { gs2Header, user, clientNonce, bare };
}

/** The fields of a client-final message, or why it is refused. */
export function parseScramClientFinal(text: string): { channelBinding: string; nonce: string; proof: Buffer; withoutProof: string } | { refused: string } {
  const at = text.lastIndexOf(',p=');
  if (at < 0) return { refused: 'a SCRAM client-final message ends with p=' };
  const withoutProof = text.slice(0, at);
  const attributes = scramAttributes(withoutProof);
  if (attributes === null || !attributes.has('c') || !attributes.has('r')) return { refused: 'a SCRAM client-final message has c= and r=' };
  const proof = Buffer.from(text.slice(at + 3), 'base64');
  return { channelBinding: attributes.get('c')!, nonce: attributes.get('r')!, proof, withoutProof };
}

class ScramExchange implements SaslExchange {
  private state: { phase: 'first' } | { phase: 'final'; nonce: string; clientNonce: string; gs2Header: string; authStart: string; keys: ScramKeys; token: IssuedToken | null } | { phase: 'over' } = { phase: 'first' };

  constructor(
    private readonly hash: ScramHash,
    private readonly policy: AccessPolicy,
    private readonly store: ScramKeyStore,
    private readonly serverNonce: () => string,
  ) {}

  async step(message: Uint8Array): Promise<SaslStep> {
    const text = Buffer.from(message).toString('utf8');
    const state = this.state;
    this.state = { phase: 'over' };
    if (state.phase === 'first') {
      const first = parseScramClientFirst(text);
      if ('refused' in first) return { kind: 'failed', reason: first.refused };
      const token = tokenNamed(this.policy, first.user);
      const keys = token !== null ? await this.store.keysOf(token, this.hash) : this.store.unknownUserKeys(first.user, this.hash);
      const nonce = first.clientNonce + this.serverNonce();
      const serverFirst = `r=${nonce},s=${keys.salt.toString('base64')},i=${keys.iterations}`;
      this.state = { phase: 'final', nonce, clientNonce: first.clientNonce, gs2Header: first.gs2Header, authStart: `${first.bare},${serverFirst}`, keys, token };
      return { kind: 'continue', reply: Buffer.from(serverFirst, 'utf8') };
    }
    if (state.phase === 'over') return { kind: 'failed', reason: 'the SCRAM exchange is over' };
    const final = parseScramClientFinal(text);
    if ('refused' in final) return { kind: 'failed', reason: final.refused };
    if (final.channelBinding !== Buffer.from(state.gs2Header, 'utf8').toString('base64')) return { kind: 'failed', reason: 'the SCRAM channel binding does not match the GS2 header' };
    if (!scramNonceMatches(final.nonce, state.nonce, state.clientNonce)) return { kind: 'failed', reason: 'the SCRAM nonce does not match' };
    const authMessage = `${state.authStart},${final.withoutProof}`;
    const clientSignature = hmac(this.hash, state.keys.storedKey, authMessage);
    if (final.proof.length !== clientSignature.length) return { kind: 'failed', reason: 'the SCRAM proof has the wrong length' };
    const clientKey = Buffer.alloc(clientSignature.length);
    for (let index = 0; index < clientKey.length; index += 1) clientKey[index] = final.proof[index]! ^ clientSignature[index]!;
    const matches = timingSafeEqual(createHash(this.hash).update(clientKey).digest(), state.keys.storedKey);
    if (!matches || state.token === null) return { kind: 'failed', reason: state.token === null ? 'no token of that name' : 'the SCRAM proof does not match the token' };
    const serverFinal = `v=${hmac(this.hash, state.keys.serverKey, authMessage).toString('base64')}`;
    return { kind: 'authenticated', reply: Buffer.from(serverFinal, 'utf8'), token: state.token };
  }
}

/**
 * Whether a client-final nonce is the one the server sent (client nonce + server nonce). librdkafka before 2.6.1
 * (Debian bookworm's is 2.0.2) sends the client nonce once more in front of it (confluentinc/librdkafka#4895);
 * Kafka brokers before 4.0 took that, and so does mink, in exactly that shape: the server's part is still
 * checked, so a replayed exchange still fails.
 */
export function scramNonceMatches(sent: string, expected: string, clientNonce: string): boolean {
  return sent === expected || sent === clientNonce + expected;
}

/** `k=v` attributes separated by commas (values may hold '='), or null when one is not of that form. */
function scramAttributes(text: string): Map<string, string> | null {
  const attributes = new Map<string, string>();
  for (const part of text.split(',')) {
    const at = part.indexOf('=');
    if (at < 1) return null;
    attributes.set(part.slice(0, at), part.slice(at + 1));
  }
  return attributes;
}

/** A SCRAM saslname: '=2C' is ',' and '=3D' is '='; any other '=' makes it invalid (null). */
function unescapeScramName(name: string): string | null {
  if (/=(?!2C|3D)/.test(name)) return null;
  return name.replace(/=2C/g, ',').replace(/=3D/g, '=');
}

function hmac(hash: ScramHash, key: Buffer, data: string): Buffer {
  return createHmac(hash, key).update(data, 'utf8').digest();
}
