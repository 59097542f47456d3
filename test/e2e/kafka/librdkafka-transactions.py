"""librdkafka (Debian's python3-confluent-kafka) as a transactional producer against mink: init_transactions,
then a committed transaction, an aborted one and a committed one, each of 20 keyed records to an existing
topic; then a read_committed consumer (librdkafka's default isolation level) reads the topic from the
beginning to its end. Prints {"committed": [...], "aborted": [...], "readCommitted": [...], "errors": [...]}.
With --pause, halfway through each transaction's records it prints {"paused": "<name>"} and waits for a line
on stdin, so the test can kill a node mid-transaction."""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

bootstrap, topic = sys.argv[1], sys.argv[2]
pause = '--pause' in sys.argv[3:]
errors = []
committed = []
aborted = []

producer = Producer({'bootstrap.servers': bootstrap, 'transactional.id': f'librdkafka-{topic}', 'transaction.timeout.ms': 60000})


def delivered(error, message):
    if error is not None:
        errors.append(f'{message.value().decode()}: {error}')


try:
    producer.init_transactions(60)
    for name, commit in (('first', True), ('dropped', False), ('second', True)):
        producer.begin_transaction()
        values = [f'{name}-{index}' for index in range(20)]
        for index, value in enumerate(values):
            if pause and index == 10:
                producer.flush(60)
                print(json.dumps({'paused': name}), flush=True)
                sys.stdin.readline()
            producer.produce(topic, key=value, value=value, on_delivery=delivered)
        producer.flush(60)
        if commit:
            producer.commit_transaction(60)
            committed.extend(values)
        else:
            producer.abort_transaction(60)
            aborted.extend(values)
except KafkaException as error:
    errors.append(str(error))

read = []
consumer = Consumer({'bootstrap.servers': bootstrap, 'group.id': f'reader-{topic}', 'isolation.level': 'read_committed',
                     'auto.offset.reset': 'earliest', 'enable.partition.eof': True, 'enable.auto.commit': False})
partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
consumer.assign([TopicPartition(topic, partition, 0) for partition in partitions])
at_end = set()
deadline = time.time() + 60
while len(at_end) < len(partitions) and time.time() < deadline:
    message = consumer.poll(0.5)
    if message is None:
        continue
    if message.error():
        if message.error().code() == -191:  # _PARTITION_EOF
            at_end.add(message.partition())
        else:
            errors.append(str(message.error()))
        continue
    read.append(message.value().decode())
consumer.close()
if len(at_end) < len(partitions):
    errors.append(f'only {len(at_end)} of {len(partitions)} partitions read to their end')
print(json.dumps({'committed': committed, 'aborted': aborted, 'readCommitted': read, 'errors': errors}), flush=True)
