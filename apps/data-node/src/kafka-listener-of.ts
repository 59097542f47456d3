import { hostname } from 'node:os';
import { ENV, type ServiceConfig } from '@mink/config';
import { KafkaListener, SASL_MECHANISMS, ScramKeyStore, kafkaBroker, type KafkaAuthentication } from '@mink/kafka';
import { loadAccessPolicy } from '@mink/protocol';
import { issueKafkaCertificate, readTlsCredentials, type Logger, type TlsCredentials } from '@mink/runtime';
import type { DataNodeKafkaBackend } from '@mink/data-plane';

/**
 * The data node's Kafka listener (docs/architecture.md §12) as its settings ask: with a tokens file
 * (`MINK_AUTH_TOKENS_FILE`, the gateway's), SASL PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 against its tokens and
 * their scopes, and nothing but ApiVersions and the SASL exchange before it; with `MINK_KAFKA_TLS_CERT_FILE` and
 * `MINK_KAFKA_TLS_KEY_FILE`, TLS with that certificate; with `MINK_KAFKA_TLS_CA_FILE` and `MINK_KAFKA_TLS_CA_KEY_FILE`,
 * TLS with a certificate the node issues itself now for its advertised host, its hostname and
 * `MINK_KAFKA_TLS_EXTRA_NAMES` (replicas whose address is known only when they start). A file that cannot be read,
 * or a certificate and key that do not go together, stops the node at start, naming it.
 */
export async function kafkaListenerOf(config: ServiceConfig, backend: DataNodeKafkaBackend, logger: Logger): Promise<KafkaListener> {
  const policy = loadAccessPolicy(config.authTokensFile);
  const authentication: KafkaAuthentication | null =
    policy === null
      ? null
      : {
          policy,
          mechanisms: SASL_MECHANISMS,
          keys: new ScramKeyStore(),
          onFailure: (peer, reason) => logger.warn({ peer, reason }, 'a Kafka SASL authentication failed'),
        };
  return new KafkaListener({
    host: config.kafkaBindHost,
    port: config.kafkaPort,
    handler: kafkaBroker(backend, backend.groups, authentication),
    logger,
    tls: await kafkaTlsOf(config, logger),
  });
}

async function kafkaTlsOf(config: ServiceConfig, logger: Logger): Promise<TlsCredentials | null> {
  if (config.kafkaTls !== null) return readTlsCredentials(config.kafkaTls, { cert: ENV.kafkaTlsCertFile, key: ENV.kafkaTlsKeyFile });
  if (config.kafkaTlsIssuer === null) return null;
  const issued = await issueKafkaCertificate(config.kafkaTlsIssuer, config.advertisedHost, hostname());
  logger.info({ names: issued.names.map((name) => `${name.type.toUpperCase()}:${name.value}`), notAfter: issued.notAfter.toISOString() }, "issued the Kafka listener's TLS certificate");
  return { cert: issued.cert, key: issued.key };
}
