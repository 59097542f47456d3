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

  /** POSTs a body that is already JSON text (a bulk load's rows keep their own text, big integers exact). */
  postJsonText<T>(path: string, json: string): Promise<T> {
    return this.exchange('POST', path, { json }).then((answer) => parseJson(answer.text) as T);
  }

  /**
   * A GET whose answer is not JSON (a scan as NDJSON): its text and headers. `timeoutMs` bounds the whole
   * exchange (a long poll's wait and then some); errors as for every request.
   */
  getText(path: string, accept: string, timeoutMs: number = LIMITS.cliRequestTimeoutMs, signal?: AbortSignal): Promise<{ text: string; headers: Headers }> {
    return this.exchange('GET', path, { accept, timeoutMs, signal });
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const answer = await this.exchange(method, path, body === undefined ? {} : { json: JSON.stringify(body) });
    return parseJson(answer.text) as T;
  }

  /** One request; a refusal or a network failure becomes a CliError (see the class comment). */
  private async exchange(
    method: string,
    path: string,
    options: { json?: string; accept?: string; timeoutMs?: number; signal?: AbortSignal },
  ): Promise<{ text: string; headers: Headers }> {
    const url = `${this.baseUrl}${path}`;
    const timeoutMs = options.timeoutMs ?? LIMITS.cliRequestTimeoutMs;
    let response: Response;
    let text: string;
    try {
      response = await this.io.fetch(url, {
        method,
        headers: {
          ...(options.json === undefined ? {} : { 'content-type': 'application/json' }),
          ...(options.accept === undefined ? {} : { accept: options.accept }),
          ...(this.token === undefined ? {} : { authorization: `Bearer ${this.token}` }),
        },
        body: options.json,
        signal: options.signal === undefined ? AbortSignal.timeout(timeoutMs) : AbortSignal.any([AbortSignal.timeout(timeoutMs), options.signal]),
      });
      text = await response.text();
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (error instanceof Error && error.name === 'TimeoutError') {
        throw new CliError(`Timeout: ${method} ${url} got no answer within ${timeoutMs} ms`);
      }
      throw new CliError(`Unavailable: cannot reach the gateway at ${this.baseUrl} (${networkReason(error)})`);
    }
    if (!response.ok) {
      const error = (parseJson(text) as ErrorBody | undefined)?.error;
      if (error && typeof error.code === 'string') {
        throw new CliError(`${error.code}: ${typeof error.message === 'string' ? error.message : JSON.stringify(error.message)}`);
      }
      const detail = text.trim() === '' ? response.statusText : text.trim().slice(0, 200);
      throw new CliError(`HTTP ${response.status}: ${detail}`);
    }
    return { text, headers: response.headers };
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
