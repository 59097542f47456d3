/**
 * One Kafka request on a connection of its own, for e2e tests that must control exactly what a client
 * sends (the same bytes twice, a chosen producer id and sequence): the request is built and framed by
 * kafkajs's own protocol code and the response body decoded by kafkajs's decoder, which, unlike kafkajs's
 * clients, hands back error codes instead of retrying them. kafkajs has no types for these internals.
 */
import { connect } from 'node:net';

function kafkajsInternal(path: string): any {
  return require(`kafkajs/src/${path}`);
}

/** kafkajs's int64, which its encoders take for producer ids. */
export const KafkajsLong = kafkajsInternal('utils/long');

let correlationId = 0;

/**
 * Sends one framed request (`frame`: its size, then the request) to `broker` (`host:port`) on a connection
 * of its own and resolves with the response's body (without its size), naming `what` if none comes.
 */
export function exchangeFrame(broker: string, frame: Uint8Array, what: string): Promise<Buffer> {
  const [host, port] = broker.split(':');
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(port), host!, () => socket.write(frame));
    socket.setTimeout(30_000, () => socket.destroy(new Error(`no answer from ${broker} to ${what} in 30 s`)));
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      const received = Buffer.concat(chunks);
      if (received.byteLength >= 4 && received.byteLength >= 4 + received.readInt32BE(0)) {
        socket.end();
        resolve(received.subarray(4, 4 + received.readInt32BE(0)));
      }
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`${broker} closed the connection before answering ${what}`)));
  });
}

/** Sends one `api` request at `version` (kafkajs's field names) to `broker` (`host:port`) and decodes the response. */
export async function rawKafkaRequest(broker: string, api: string, version: number, fields: object): Promise<any> {
  const request = kafkajsInternal(`protocol/requests/${api}/v${version}/request`)(fields);
  const id = ++correlationId;
  const { buffer } = await kafkajsInternal('protocol/request')({ correlationId: id, clientId: 'mink-e2e-raw', request });
  const frame = await exchangeFrame(broker, buffer, `${api} v${version}`);
  if (frame.readInt32BE(0) !== id) throw new Error(`the answer carries correlation id ${frame.readInt32BE(0)}, not ${id}`);
  // Response header v0 (the APIs used here are not flexible at these versions): the correlation id only.
  return kafkajsInternal(`protocol/requests/${api}/v${version}/response`).decode(frame.subarray(4));
}
