import type { CliIo } from './io';
import { run } from './program';

/** Runs `mink table list` in-process against a fake gateway; returns the Authorization header of each request. */
async function authorizationsSent(env: NodeJS.ProcessEnv, status = 200, body: unknown = { tables: [] }): Promise<{ exitCode: number; stderr: string; authorizations: (string | null)[] }> {
  const authorizations: (string | null)[] = [];
  let stderr = '';
  const io: CliIo = {
    writeOut: () => undefined,
    writeError: (text) => void (stderr += text),
    env,
    fetch: async (_input, init) => {
      authorizations.push(new Headers(init?.headers).get('authorization'));
      return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
    },
  };
  const exitCode = await run(['table', 'list'], io, async () => {
    throw new Error('the test must not start a cluster');
  });
  return { exitCode, stderr, authorizations };
}

describe('the bearer token of the mink commands', () => {
  it('sends MINK_TOKEN as a bearer token, and no Authorization header without it', async () => {
    expect(await authorizationsSent({ MINK_TOKEN: 'a-token-of-the-ops-team' })).toEqual({ exitCode: 0, stderr: '', authorizations: ['Bearer a-token-of-the-ops-team'] });
    expect(await authorizationsSent({})).toEqual({ exitCode: 0, stderr: '', authorizations: [null] });
    expect(await authorizationsSent({ MINK_TOKEN: '' })).toEqual({ exitCode: 0, stderr: '', authorizations: [null] });
  });

  it('prints a refusal as the gateway words it, without the token', async () => {
    const refused = await authorizationsSent({ MINK_TOKEN: 'a-token-of-the-ops-team' }, 403, { error: { code: 'PermissionDenied', message: "token 'ops' lacks the 'read' scope this operation needs" } });
    expect(refused).toEqual({ exitCode: 1, stderr: "error: PermissionDenied: token 'ops' lacks the 'read' scope this operation needs\n", authorizations: ['Bearer a-token-of-the-ops-team'] });
  });
});
