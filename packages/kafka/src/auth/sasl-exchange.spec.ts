import { createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import { parseAccessPolicy, type AccessPolicy, type IssuedToken } from '@mink/protocol';
import { ScramKeyStore, parsePlainMessage, parseScramClientFirst, saslExchangeOf, scramNonceMatches, type SaslStep } from './sasl-exchange';

const policy = parseAccessPolicy(JSON.stringify({ tokens: [{ name: 'app', token: 'app-secret-0123456789', scopes: ['write'] }] }), 'tokens.json');
const bytes = (text: string) => Buffer.from(text, 'utf8');
const replyText = (step: SaslStep) => (step.kind === 'failed' ? `failed: ${step.reason}` : step.reply.toString('utf8'));

describe('PLAIN', () => {
  it.each<[string, string, string | null]>([
    ['the right user and secret', '\u0000app\u0000app-secret-0123456789', 'app'],
    ['the authzid equal to the user', 'app\u0000app\u0000app-secret-0123456789', 'app'],
    ['a wrong secret', '\u0000app\u0000app-secret-0123456780', null],
    ['an unknown user', '\u0000nobody\u0000app-secret-0123456789', null],
    ['another authzid', 'ops\u0000app\u0000app-secret-0123456789', null],
    ['no separators', 'app app-secret-0123456789', null],
    ['an empty password', '\u0000app\u0000', null],
  ])('%s', async (_, message, authenticated) => {
    const step = await saslExchangeOf('PLAIN', policy, new ScramKeyStore()).step(bytes(message));
    expect(step.kind === 'authenticated' ? step.token.name : null).toBe(authenticated);
  });

  it('takes one message only', async () => {
    const exchange = saslExchangeOf('PLAIN', policy, new ScramKeyStore());
    await exchange.step(bytes('\u0000app\u0000wrong-secret-000000'));
    expect((await exchange.step(bytes('\u0000app\u0000app-secret-0123456789'))).kind).toBe('failed');
  });

  it('parsePlainMessage splits the three fields', () => {
    expect(parsePlainMessage(bytes('\u0000u\u0000p'))).toEqual({ user: 'u', password: 'p' });
  });
});

describe('SCRAM-SHA-256 against the RFC 7677 example', () => {
  // RFC 7677 §3: user "user", password "pencil", with its nonces and salt; the server's messages must be the RFC's byte for byte.
  const token: IssuedToken = { name: 'user', digest: createHash('sha256').update('pencil').digest(), secret: 'pencil', scopes: new Set(['read']), tables: null };
  const rfcPolicy: AccessPolicy = { tokens: [token] };
  const store = () => new ScramKeyStore(() => Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'));
  const exchange = () => saslExchangeOf('SCRAM-SHA-256', rfcPolicy, store(), () => '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0');

  it('answers the RFC server-first and server-final messages and authenticates', async () => {
    const server = exchange();
    const first = await server.step(bytes('n,,n=user,r=rOprNGfwEbeRWgbNEkqO'));
    expect(replyText(first)).toBe('r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096');
    const final = await server.step(bytes('c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ='));
    expect(replyText(final)).toBe('v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=');
    expect(final.kind === 'authenticated' && final.token.name).toBe('user');
  });

  it.each<[string, string]>([
    ['a proof changed by one bit', 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVU='],
    ['another nonce', 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k1,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ='],
    ['another channel binding', 'c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ='],
    ['no proof', 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0'],
  ])('refuses %s', async (_, clientFinal) => {
    const server = exchange();
    await server.step(bytes('n,,n=user,r=rOprNGfwEbeRWgbNEkqO'));
    expect((await server.step(bytes(clientFinal))).kind).toBe('failed');
  });
});

describe('SCRAM-SHA-512 with a client written from RFC 5802', () => {
  // The client side, from the RFC's formulas: what a Kafka client computes.
  async function authenticate(user: string, password: string): Promise<SaslStep> {
    const server = saslExchangeOf('SCRAM-SHA-512', policy, new ScramKeyStore());
    const clientNonce = 'fyko+d2lbbFgONRv9qkxdawL';
    const bare = `n=${user},r=${clientNonce}`;
    const first = await server.step(bytes(`n,,${bare}`));
    if (first.kind !== 'continue') return first;
    const serverFirst = first.reply.toString('utf8');
    const fields = new Map(serverFirst.split(',').map((part) => [part.slice(0, 1), part.slice(2)]));
    expect(fields.get('r')!.startsWith(clientNonce)).toBe(true);
    const salted = pbkdf2Sync(password, Buffer.from(fields.get('s')!, 'base64'), Number(fields.get('i')), 64, 'sha512');
    const clientKey = createHmac('sha512', salted).update('Client Key').digest();
    const withoutProof = `c=biws,r=${fields.get('r')}`;
    const authMessage = `${bare},${serverFirst},${withoutProof}`;
    const signature = createHmac('sha512', createHash('sha512').update(clientKey).digest()).update(authMessage).digest();
    const proof = Buffer.from(clientKey.map((byte, index) => byte ^ signature[index]!));
    const final = await server.step(bytes(`${withoutProof},p=${proof.toString('base64')}`));
    if (final.kind === 'authenticated') {
      const serverSignature = createHmac('sha512', createHmac('sha512', salted).update('Server Key').digest()).update(authMessage).digest();
      expect(final.reply.toString('utf8')).toBe(`v=${serverSignature.toString('base64')}`);
    }
    return final;
  }

  it('authenticates the token by its name and secret', async () => {
    const step = await authenticate('app', 'app-secret-0123456789');
    expect(step.kind === 'authenticated' && step.token.name).toBe('app');
  });

  it.each([
    ['a wrong secret', 'app', 'app-secret-0123456780'],
    ['an unknown user (answered like a known one until the proof)', 'nobody', 'app-secret-0123456789'],
  ])('refuses %s', async (_, user, password) => {
    expect((await authenticate(user, password)).kind).toBe('failed');
  });
});

describe('scramNonceMatches', () => {
  it.each<[string, boolean]>([
    ['cnonce+snonce', true],
    ['cnoncecnonce+snonce', true], // librdkafka < 2.6.1
    ['cnonce+snonceX', false],
    ['cnonce+snonc', false],
    ['xxcnonce+snonce', false],
    ['cnoncecnoncecnonce+snonce', false],
  ])('%s → %s', (sent, matches) => {
    expect(scramNonceMatches(sent, 'cnonce+snonce', 'cnonce')).toBe(matches);
  });
});

describe('parseScramClientFirst', () => {
  it.each<[string, string | null]>([
    ['n,,n=app,r=abc', 'app'],
    ['y,,n=app,r=abc', 'app'],
    ['n,,n=a=2Cb=3Dc,r=abc', 'a,b=c'],
    ['p=tls-unique,,n=app,r=abc', null],
    ['n,,n=app,r=abc,tokenauth=true', null],
    ['n,,m=ext,n=app,r=abc', null],
    ['n,,n=a=2Xb,r=abc', null],
    ['n,,r=abc', null],
    ['n=app,r=abc', null],
  ])('%s → %s', (text, user) => {
    const parsed = parseScramClientFirst(text);
    expect('refused' in parsed ? null : parsed.user).toBe(user);
  });
});
