import { PermissionDeniedError, UnauthenticatedError } from './errors';
import { authorize, parseAccessPolicy, type AccessNeed } from './access';

const OPS = 'ops-0123456789abcdef';
const WRITER = 'writer-0123456789ab';
const READER = 'reader-0123456789ab';
const EVENTS_READER = 'events-reader-01234';

const POLICY = parseAccessPolicy(
  JSON.stringify({
    tokens: [
      { name: 'ops', token: OPS, scopes: ['admin'] },
      { name: 'producer', token: WRITER, scopes: ['write'] },
      { name: 'analyst', token: READER, scopes: ['read'] },
      { name: 'events-analyst', token: EVENTS_READER, scopes: ['read', 'write'], tables: ['events'] },
    ],
  }),
  'tokens.json',
);

describe('authorize', () => {
  type Outcome = string | typeof UnauthenticatedError | typeof PermissionDeniedError;
  it.each<[string, string | undefined, AccessNeed, Outcome]>([
    ['no header', undefined, { scope: 'read', table: 'events' }, UnauthenticatedError],
    ['an empty header', '', { scope: 'read', table: 'events' }, UnauthenticatedError],
    ['basic credentials', `Basic ${Buffer.from('a:b').toString('base64')}`, { scope: 'read', table: 'events' }, UnauthenticatedError],
    ['a bearer token nobody issued', 'Bearer not-a-token-of-ours-0000', { scope: 'read', table: 'events' }, UnauthenticatedError],
    ['an issued token with one character more', `Bearer ${OPS}x`, { scope: 'read' }, UnauthenticatedError],
    ['admin creating a table', `Bearer ${OPS}`, { scope: 'admin', table: 'events' }, 'ops'],
    ['admin appending (admin grants write)', `Bearer ${OPS}`, { scope: 'write', table: 'events' }, 'ops'],
    ['admin reading the cluster (admin grants read)', `Bearer ${OPS}`, { scope: 'read' }, 'ops'],
    ['the scheme in lower case', `bearer ${OPS}`, { scope: 'read' }, 'ops'],
    ['write appending', `Bearer ${WRITER}`, { scope: 'write', table: 'events' }, 'producer'],
    ['write scanning (write does not grant read)', `Bearer ${WRITER}`, { scope: 'read', table: 'events' }, PermissionDeniedError],
    ['write dropping a table', `Bearer ${WRITER}`, { scope: 'admin', table: 'events' }, PermissionDeniedError],
    ['read scanning', `Bearer ${READER}`, { scope: 'read', table: 'events' }, 'analyst'],
    ['read listing tables', `Bearer ${READER}`, { scope: 'read' }, 'analyst'],
    ['read appending', `Bearer ${READER}`, { scope: 'write', table: 'events' }, PermissionDeniedError],
    ['a table-limited token on its table', `Bearer ${EVENTS_READER}`, { scope: 'write', table: 'events' }, 'events-analyst'],
    ['a table-limited token on another table', `Bearer ${EVENTS_READER}`, { scope: 'read', table: 'orders' }, PermissionDeniedError],
    ['a table-limited token listing every table', `Bearer ${EVENTS_READER}`, { scope: 'read' }, PermissionDeniedError],
    ['a table-limited token beyond its scopes', `Bearer ${EVENTS_READER}`, { scope: 'admin', table: 'events' }, PermissionDeniedError],
  ])('%s', (_name, header, need, expected) => {
    if (typeof expected === 'string') {
      expect(authorize(POLICY, header, need)).toBe(expected);
    } else {
      expect(() => authorize(POLICY, header, need)).toThrow(expected);
    }
  });

  it('names neither the token sent nor any issued one in its refusals', () => {
    for (const header of [`Bearer ${WRITER}`, `Bearer ${READER}`, 'Bearer guessed-token-00000000']) {
      try {
        authorize(POLICY, header, { scope: 'admin', table: 'events' });
        throw new Error('allowed');
      } catch (error) {
        const message = (error as Error).message;
        for (const secret of [OPS, WRITER, READER, EVENTS_READER, 'guessed-token-00000000']) expect(message).not.toContain(secret);
      }
    }
  });
});

describe('parseAccessPolicy', () => {
  const token = (fields: Record<string, unknown>) => JSON.stringify({ tokens: [{ name: 'a', token: 'a-secret-of-16-chars', scopes: ['read'], ...fields }] });
  it.each<[string, string, string]>([
    ['text that is not JSON', '{', 'not JSON'],
    ['a list instead of an object', '[]', 'expected {"tokens"'],
    ['no tokens', '{"tokens": []}', 'is empty'],
    ['an unknown field', token({ role: 'x' }), "unknown fields 'role'"],
    ['a missing name', token({ name: '' }), '"name" must be'],
    ['a short token', token({ token: 'short' }), 'at least 16 characters'],
    ['a token with a space', token({ token: 'has a space in it!!' }), 'without spaces'],
    ['an unknown scope', token({ scopes: ['superuser'] }), '"scopes" must be'],
    ['no scopes', token({ scopes: [] }), '"scopes" must be'],
    ['an empty table list', token({ tables: [] }), '"tables", when given'],
    [
      'a name used twice',
      JSON.stringify({ tokens: [{ name: 'a', token: 'a-secret-of-16-chars', scopes: ['read'] }, { name: 'a', token: 'b-secret-of-16-chars', scopes: ['read'] }] }),
      "the name 'a' is used twice",
    ],
    [
      'a token issued twice',
      JSON.stringify({ tokens: [{ name: 'a', token: 'a-secret-of-16-chars', scopes: ['read'] }, { name: 'b', token: 'a-secret-of-16-chars', scopes: ['write'] }] }),
      'issued twice',
    ],
  ])('refuses %s, naming the file and what is wrong', (_name, text, message) => {
    expect(() => parseAccessPolicy(text, 'tokens.json')).toThrow(message);
    expect(() => parseAccessPolicy(text, 'tokens.json')).toThrow('tokens.json');
  });

  it('never puts a secret in its refusals', () => {
    expect(() => parseAccessPolicy(token({ scopes: ['root'] }), 'tokens.json')).toThrow(expect.objectContaining({ message: expect.not.stringContaining('a-secret-of-16-chars') }));
  });
});
