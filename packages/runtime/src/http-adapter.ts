import { FastifyAdapter } from '@nestjs/platform-fastify';
import { LIMITS } from '@mink/config';
import { InvalidArgumentError } from '@mink/protocol';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A JSON request body, decoded strictly: bytes that are not valid UTF-8 are refused rather than replaced by
 * U+FFFD (which would store text the caller never sent), and a body that is not JSON is refused; both are
 * `InvalidArgumentError`s, so HTTP callers get a 400 naming what is wrong. An empty body reads as undefined.
 */
export function parseJsonBody(body: Buffer): unknown {
  let text: string;
  try {
    text = strictUtf8.decode(body);
  } catch {
    throw new InvalidArgumentError('request body is not valid UTF-8');
  }
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(`request body is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * The Fastify adapter of every mink HTTP service: the body size bound and strict JSON bodies. Create the
 * Nest application with `bodyParser: false`, or Nest registers its own JSON parser over this one.
 */
export function createHttpAdapter(): FastifyAdapter {
  const adapter = new FastifyAdapter({ bodyLimit: LIMITS.httpBodyBytesMax });
  const instance = adapter.getInstance();
  instance.removeContentTypeParser('application/json');
  instance.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  return adapter;
}
