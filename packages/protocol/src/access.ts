import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PermissionDeniedError, UnauthenticatedError } from './errors';

/**
 * Who may do what through the gateway: bearer tokens with scopes, read from the file `MINK_AUTH_TOKENS_FILE`
 * names (docs/operations.md "Authentication"). Without a file the gateway asks for no credentials (`mink up`'s default,
 * on loopback only).
 *
 * - `read`: describe and list tables, scans, lookups, cluster status.
 * - `write`: appends, puts, deletes.
 * - `admin`: create, alter and drop tables, rebalance; it also grants `read` and `write`.
 *
 * A token with `tables` acts on those tables only, and may not use the operations that name no table (listing
 * tables, cluster status, rebalance), which would show or touch the others.
 */
export type AccessScope = 'read' | 'write' | 'admin';

export const ACCESS_SCOPES: readonly AccessScope[] = ['read', 'write', 'admin'];

/** What an operation needs: a scope, and the table it acts on (absent for operations on the cluster or every table). */
export interface AccessNeed {
  scope: AccessScope;
  table?: string;
}

/**
 * One issued token, as the policy keeps it: its name (for logs and as a Kafka SASL user name), the SHA-256 of
 * its secret, the secret itself (SASL/SCRAM derives its keys from it; never logged), what it allows.
 */
export interface IssuedToken {
  name: string;
  digest: Buffer;
  secret: string;
  scopes: ReadonlySet<AccessScope>;
  /** Null: every table. */
  tables: ReadonlySet<string> | null;
}

export interface AccessPolicy {
  tokens: readonly IssuedToken[];
}

/** Shortest secret taken: shorter ones are guessable. */
export const TOKEN_CHARS_MIN = 16;

/**
 * The policy of a tokens file: `{"tokens": [{"name": "ops", "token": "…", "scopes": ["admin"], "tables": ["t"]?}]}`.
 * Throws an Error naming `source` and what is wrong (the gateway then refuses to start); the secrets
 * themselves never appear in a message.
 */
export function parseAccessPolicy(text: string, source: string): AccessPolicy {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`${source}: not JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  const list = (parsed as { tokens?: unknown } | null)?.tokens;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || !Array.isArray(list)) {
    throw new Error(`${source}: expected {"tokens": [{"name", "token", "scopes", "tables"?}, …]}`);
  }
  if (list.length === 0) throw new Error(`${source}: "tokens" is empty, so nobody could use the gateway`);
  const names = new Set<string>();
  const digests = new Set<string>();
  const tokens = list.map((entry: unknown, index): IssuedToken => {
    const where = `${source}: tokens[${index}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new Error(`${where} is not an object`);
    const { name, token, scopes, tables, ...rest } = entry as Record<string, unknown>;
    const unknown = Object.keys(rest);
    if (unknown.length > 0) throw new Error(`${where} has unknown fields ${unknown.map((key) => `'${key}'`).join(', ')}`);
    if (typeof name !== 'string' || name.trim() === '') throw new Error(`${where}: "name" must be a non-empty string`);
    if (names.has(name)) throw new Error(`${where}: the name '${name}' is used twice`);
    names.add(name);
    if (typeof token !== 'string' || token.length < TOKEN_CHARS_MIN || /\s/.test(token)) {
      throw new Error(`${where} ('${name}'): "token" must be a string of at least ${TOKEN_CHARS_MIN} characters without spaces`);
    }
    const digest = digestOf(token);
    if (digests.has(digest.toString('hex'))) throw new Error(`${where} ('${name}'): the same token is issued twice`);
    digests.add(digest.toString('hex'));
    if (!Array.isArray(scopes) || scopes.length === 0 || !scopes.every((scope) => ACCESS_SCOPES.includes(scope as AccessScope))) {
      throw new Error(`${where} ('${name}'): "scopes" must be a non-empty list of ${ACCESS_SCOPES.map((scope) => `"${scope}"`).join(', ')}`);
    }
    if (tables !== undefined && (!Array.isArray(tables) || tables.length === 0 || !tables.every((table) => typeof table === 'string' && table !== ''))) {
      throw new Error(`${where} ('${name}'): "tables", when given, must be a non-empty list of table names`);
    }
    return { name, digest, secret: token, scopes: new Set(scopes as AccessScope[]), tables: tables === undefined ? null : new Set(tables as string[]) };
  });
  return { tokens };
}

/**
 * The name of the token an `Authorization` header carries when it allows `need`; throws UnauthenticatedError
 * when the header is missing, not `Bearer <token>`, or names no issued token, and PermissionDeniedError when
 * the token lacks the scope or the table.
 */
export function authorize(policy: AccessPolicy, authorization: string | undefined, need: AccessNeed): string {
  const found = bearerTokenOf(policy, authorization);
  const refusal = accessRefusalOf(found, need);
  if (refusal !== null) throw new PermissionDeniedError(refusal);
  return found.name;
}

/**
 * The issued token an `Authorization: Bearer <token>` header carries, whatever it allows; throws
 * UnauthenticatedError when the header is missing, not of that shape, or names no issued token. What a service
 * can check on a request's headers alone, before reading its body.
 */
export function bearerTokenOf(policy: AccessPolicy, authorization: string | undefined): IssuedToken {
  const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
  if (match === null) {
    throw new UnauthenticatedError(authorization === undefined || authorization === '' ? 'this gateway needs a bearer token: send "Authorization: Bearer <token>"' : 'the Authorization header must be "Bearer <token>"');
  }
  const digest = digestOf(match[1]!);
  // Every token is compared, in constant time, so the time taken tells nothing of which one nearly matched.
  let found: IssuedToken | undefined;
  for (const token of policy.tokens) if (timingSafeEqual(token.digest, digest)) found ??= token;
  if (found === undefined) throw new UnauthenticatedError('the bearer token is not one this gateway issued');
  return found;
}

/** Why `token` does not allow `need` (a message naming the token, never its secret), or null when it does. */
export function accessRefusalOf(token: IssuedToken, need: AccessNeed): string | null {
  if (!allowsScope(token.scopes, need.scope)) return `token '${token.name}' lacks the '${need.scope}' scope this operation needs (it has ${[...token.scopes].join(', ')})`;
  if (token.tables !== null) {
    if (need.table === undefined) return `token '${token.name}' is limited to some tables; this operation concerns every table or the cluster`;
    if (!token.tables.has(need.table)) return `token '${token.name}' does not cover table '${need.table}'`;
  }
  return null;
}

/** Whether `token` may see `table` at all: any scope, and the table among its tables when it is limited to some. */
export function coversTable(token: IssuedToken, table: string): boolean {
  return token.tables === null || token.tables.has(table);
}

/**
 * The token named `name` whose secret is `password` (a user name and password, as Kafka's SASL/PLAIN sends
 * them), or null. The password is compared by digest in constant time, and a digest is compared also when no
 * token has the name, so the time taken tells nothing of which names exist.
 */
export function tokenOfPassword(policy: AccessPolicy, name: string, password: string): IssuedToken | null {
  const digest = digestOf(password);
  const named = tokenNamed(policy, name);
  const matches = timingSafeEqual(named?.digest ?? UNMATCHABLE_DIGEST, digest);
  return named !== null && matches ? named : null;
}

/** The token named `name`, or null. */
export function tokenNamed(policy: AccessPolicy, name: string): IssuedToken | null {
  return policy.tokens.find((token) => token.name === name) ?? null;
}

/** Compared against when a name is unknown; no secret's digest equals it in practice. */
const UNMATCHABLE_DIGEST = Buffer.alloc(32, 0);

function allowsScope(scopes: ReadonlySet<AccessScope>, scope: AccessScope): boolean {
  return scopes.has(scope) || scopes.has('admin');
}

function digestOf(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/**
 * The policy of the tokens file `path` names (`MINK_AUTH_TOKENS_FILE`: the gateway's HTTP and gRPC APIs and the
 * data nodes' Kafka listeners read the same file), or null when it names none. Throws, naming the file, when it
 * cannot be used.
 */
export function loadAccessPolicy(path: string): AccessPolicy | null {
  if (path === '') return null;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`MINK_AUTH_TOKENS_FILE: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  return parseAccessPolicy(text, path);
}
