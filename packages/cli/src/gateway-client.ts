import { LIMITS } from '@mink/config';
import { CliError, type CliIo } from './io';

/** The environment variable that names the gateway for the `mink` commands that talk to it. */
export const GATEWAY_URL_VARIABLE = 'MINK_GATEWAY_URL';
export const DEFAULT_GATEWAY_URL = 'http://127.0.0.1:8080';
/**
 * The environment variable holding the bearer token the `mink` commands send to a gateway that asks for one
 * (MINK_AUTH_TOKENS_FILE on the gateway). An environment variable rather than a flag, so the token shows
 * neither in the process list nor in the shell's history.
 */
export const TOKEN_VARIABLE = 'MINK_TOKEN';

/** The gateway URL to use: the flag, else MINK_GATEWAY_URL, else the local default; without a trailing slash. */
export function resolveGatewayUrl(flag: string | undefined, env: NodeJS.ProcessEnv): string {
  const url = flag ?? env[GATEWAY_URL_VARIABLE] ?? DEFAULT_GATEWAY_URL;
  return url.replace(/\/+$/, '');
}

interface ErrorBody {
  error?: { code?: unknown; message?: unknown };
}

/**
 * A minimal client of the gateway's HTTP API (docs/architecture.md §12) for the CLI. Every failure becomes a CliError
 * whose message is `<code>: <message>`: the API's error code when the gateway answered with one,
 * `Unavailable` when it could not be reached, `Timeout` when it did not answer in time.
 */
export class GatewayClient {
  constructor(
    readonly baseUrl: string,
    private readonly io: Pick<CliIo, 'fetch'>,
    /** Sent as `Authorization: Bearer <token>` when given. */
    private readonly token?: string,
  ) {}

  get<T>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }

  post<T>(path: string, body?: unknown): Promise<T> {
    return this.request<T>('POST', path, body);
  }

  patch<T>(path: string, body?: unknown): Promise<T> {
    return this.request<T>('PATCH', path, body);
  }

  delete<T>(path: string): Promise<T> {
    return this.request<T>('DELETE', path);
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const url = `${this.baseUrl}${path}`;
    let response: Response;
    try {
      response = await this.io.fetch(url, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(this.token === undefined ? {} : { authorization: `Bearer ${this.token}` }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(LIMITS.cliRequestTimeoutMs),
      });
    } catch (error) {
      if (error instanceof Error && error.name === 'TimeoutError') {
        throw new CliError(`Timeout: ${method} ${url} got no answer within ${LIMITS.cliRequestTimeoutMs} ms`);
      }
      throw new CliError(`Unavailable: cannot reach the gateway at ${this.baseUrl} (${networkReason(error)})`);
    }
    const text = await response.text();
    const parsed = parseJson(text);
    if (!response.ok) {
      const error = (parsed as ErrorBody | undefined)?.error;
      if (error && typeof error.code === 'string') {
        throw new CliError(`${error.code}: ${typeof error.message === 'string' ? error.message : JSON.stringify(error.message)}`);
      }
      const detail = text.trim() === '' ? response.statusText : text.trim().slice(0, 200);
      throw new CliError(`HTTP ${response.status}: ${detail}`);
    }
    return parsed as T;
  }
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Node's fetch hides the socket error in `cause` ("fetch failed"); show the useful part. */
function networkReason(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause as { code?: string; message?: string } | undefined;
    if (cause?.code) return cause.code;
    if (cause?.message) return cause.message;
    return error.message;
  }
  return String(error);
}
