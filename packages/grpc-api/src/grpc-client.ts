import { join } from 'node:path';
import { credentials, loadPackageDefinition, Metadata, type ChannelCredentials, type Client, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { loadGatewayProtos, PROTO_OPTIONS } from './proto';

/**
 * Clients of the gateway's gRPC API built from the same .proto files at run time, with the messages as the
 * server sees them (PROTO_OPTIONS): what the tests use, and a start for any TypeScript caller.
 */
export interface GatewayGrpcClients {
  mink: Client;
  health: Client;
  reflection: Client;
  close(): void;
}

type Constructor = new (address: string, channelCredentials: ChannelCredentials) => Client;

/**
 * Clients of `host:port` for mink.v1.Mink, grpc.health.v1.Health and grpc.reflection.v1: plain text, or TLS
 * with `channelCredentials` (`credentials.createSsl(ca)` for a gateway with MINK_TLS_CERT_FILE).
 */
export function openGatewayGrpcClients(address: string, channelCredentials: ChannelCredentials = credentials.createInsecure()): GatewayGrpcClients {
  const loaded = loadPackageDefinition(loadGatewayProtos()) as unknown as { mink: { v1: { Mink: Constructor } }; grpc: { health: { v1: { Health: Constructor } } } };
  const reflectionProto = join(require.resolve('@grpc/reflection/package.json'), '..', 'build', 'proto', 'grpc', 'reflection', 'v1', 'reflection.proto');
  const reflection = loadPackageDefinition(loadSync(reflectionProto, PROTO_OPTIONS)) as unknown as { grpc: { reflection: { v1: { ServerReflection: Constructor } } } };
  const clients = {
    mink: new loaded.mink.v1.Mink(address, channelCredentials),
    health: new loaded.grpc.health.v1.Health(address, channelCredentials),
    reflection: new reflection.grpc.reflection.v1.ServerReflection(address, channelCredentials),
  };
  return { ...clients, close: () => Object.values(clients).forEach((client) => client.close()) };
}

/** Metadata carrying `authorization: Bearer <token>`, or none without a token. */
export function bearerMetadata(token?: string): Metadata {
  const metadata = new Metadata();
  if (token !== undefined) metadata.set('authorization', `Bearer ${token}`);
  return metadata;
}

/** A unary call of `client` as a promise of its reply; a failure rejects with the ServiceError (code, details, metadata). */
export function callUnary<Reply = any>(client: Client, method: string, request: object, metadata: Metadata = new Metadata()): Promise<Reply> {
  const call = (client as unknown as Record<string, (request: object, metadata: Metadata, callback: (error: ServiceError | null, reply: Reply) => void) => void>)[method];
  if (typeof call !== 'function') throw new Error(`the client has no method ${method}`);
  return new Promise((resolve, reject) => call.call(client, request, metadata, (error, reply) => (error ? reject(error) : resolve(reply))));
}

/** A client-streaming call (Append): writes every message, then resolves with the one reply. */
export function callClientStreaming<Reply = any>(client: Client, method: string, messages: object[], metadata: Metadata = new Metadata()): Promise<Reply> {
  const start = (client as unknown as Record<string, (metadata: Metadata, callback: (error: ServiceError | null, reply: Reply) => void) => NodeJS.WritableStream>)[method];
  if (typeof start !== 'function') throw new Error(`the client has no method ${method}`);
  return new Promise((resolve, reject) => {
    const call = start.call(client, metadata, (error, reply) => (error ? reject(error) : resolve(reply)));
    for (const message of messages) call.write(message as never);
    call.end();
  });
}

/** A server-streaming call read to its end: every message, or the ServiceError it ended with. */
export function collectServerStream<Message = any>(client: Client, method: string, request: object, metadata: Metadata = new Metadata()): Promise<Message[]> {
  const start = (client as unknown as Record<string, (request: object, metadata: Metadata) => NodeJS.ReadableStream>)[method];
  if (typeof start !== 'function') throw new Error(`the client has no method ${method}`);
  return new Promise((resolve, reject) => {
    const messages: Message[] = [];
    const call = start.call(client, request, metadata);
    call.on('data', (message: Message) => messages.push(message));
    call.on('error', reject);
    call.on('end', () => resolve(messages));
  });
}

/** The service names the server lists by reflection (grpc.reflection.v1 `list_services`). */
export function listReflectedServices(reflection: Client): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const call = (reflection as unknown as { ServerReflectionInfo: () => NodeJS.ReadWriteStream }).ServerReflectionInfo();
    call.on('data', (reply: { listServicesResponse?: { service: { name: string }[] } }) => {
      resolve((reply.listServicesResponse?.service ?? []).map((service) => service.name).sort());
      call.end();
    });
    call.on('error', reject);
    call.write({ listServices: '' } as never);
  });
}

/**
 * The encoded FileDescriptorProtos the server gives by reflection for a fully qualified symbol (a service,
 * method, message or field: `mink.v1.Mink.KafkaGroups`), the file declaring it first; null when it knows no
 * such symbol (reflection's NOT_FOUND error response).
 */
export function reflectedFilesOfSymbol(reflection: Client, symbol: string): Promise<Buffer[] | null> {
  return new Promise((resolve, reject) => {
    const call = (reflection as unknown as { ServerReflectionInfo: () => NodeJS.ReadWriteStream }).ServerReflectionInfo();
    call.on('data', (reply: { fileDescriptorResponse?: { fileDescriptorProto: Buffer[] }; errorResponse?: { errorCode: number } }) => {
      resolve(reply.fileDescriptorResponse ? reply.fileDescriptorResponse.fileDescriptorProto : null);
      call.end();
    });
    call.on('error', reject);
    call.write({ fileContainingSymbol: symbol } as never);
  });
}
