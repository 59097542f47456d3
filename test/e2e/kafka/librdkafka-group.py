"""librdkafka (Debian's python3-confluent-kafka) against mink's Kafka listener: creates a topic with the
admin client, produces `count` keyed records with an idempotent producer (lz4, acks=all; librdkafka asks
InitProducerId for a producer id and numbers its batches), then reads them with a group consumer
(subscribe, so JoinGroup/SyncGroup/OffsetCommit/OffsetFetch run through librdkafka's own group code),
commits synchronously and prints what it saw and what the group committed, as JSON."""
import json
import sys

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
partitions = 3

admin = AdminClient({'bootstrap.servers': bootstrap})
for future in admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)]).values():
    future.result()

# librdkafka's statistics name the producer id InitProducerId handed out ('eos': idemp_state, producer_id).
idempotence = {}


def statistics(text):
    eos = json.loads(text).get('eos', {})
    idempotence.update({'state': eos.get('idemp_state'), 'producerId': eos.get('producer_id')})


producer = Producer({'bootstrap.servers': bootstrap, 'acks': 'all', 'compression.type': 'lz4', 'enable.idempotence': True,
                     'statistics.interval.ms': 100, 'stats_cb': statistics})
delivery_errors = []


def delivered(error, _message):
    if error is not None:
        delivery_errors.append(str(error))


for index in range(count):
    producer.produce(topic, key=f'k{index}', value=f'v{index}', on_delivery=delivered)
unsent = producer.flush(30)
while 'state' not in idempotence:
    producer.poll(0.1)

consumer = Consumer({'bootstrap.servers': bootstrap, 'group.id': f'{topic}-readers', 'auto.offset.reset': 'earliest', 'enable.auto.commit': False})
consumer.subscribe([topic])
seen = []
errors = []
while len(set(seen)) < count:
    message = consumer.poll(15)
    if message is None:
        break
    if message.error():
        errors.append(str(message.error()))
        continue
    seen.append(message.value().decode())
consumer.commit(asynchronous=False)
committed = consumer.committed([TopicPartition(topic, partition) for partition in range(partitions)], timeout=10)
consumer.close()
print(json.dumps({'unsent': unsent, 'seen': sorted(set(seen)), 'deliveries': len(seen), 'committed': sum(tp.offset for tp in committed), 'errors': errors, 'deliveryErrors': delivery_errors, 'idempotence': idempotence}))
