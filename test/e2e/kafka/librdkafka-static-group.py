"""librdkafka (Debian's python3-confluent-kafka) as one member of a consumer group, for kafka-groups.e2e.ts:
each process is one consumer, so a test can start, stop or `kill -9` members one by one. Commands:

  create  BOOTSTRAP TOPIC PARTITIONS        creates the topic with the admin client
  produce BOOTSTRAP TOPIC FIRST COUNT       produces records v<FIRST>..v<FIRST+COUNT-1> (acks=all, idempotent)
  consume BOOTSTRAP TOPIC GROUP INSTANCE STRATEGY SESSION_MS
          subscribes as a group member (INSTANCE is its group.instance.id, '-' for a dynamic member;
          STRATEGY its partition.assignment.strategy) until its standard input closes, then closes.

Every step is printed as one JSON line on standard output: the consumer prints each rebalance callback
('assign', 'revoke', 'lost', with the partitions the callback names: all of them under an eager
assignor, only those added or taken away under cooperative-sticky), each record ('record'), each commit
('committed', with the offsets) and its close ('closed'). It commits synchronously what it consumed, at
least every 200 ms and always before it gives up a partition, so every record is committed once by the
member that consumed it and a partition's next owner starts where the last one stopped."""
import json
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

COMMIT_INTERVAL_S = 0.2
COMMIT_ATTEMPTS = 20


def emit(event, **fields):
    print(json.dumps({'event': event, 'atMs': int(time.time() * 1000), **fields}), flush=True)


def create(bootstrap, topic, partitions):
    admin = AdminClient({'bootstrap.servers': bootstrap})
    for future in admin.create_topics([NewTopic(topic, num_partitions=int(partitions), replication_factor=1)]).values():
        future.result()
    emit('created', topic=topic)


def produce(bootstrap, topic, first, count):
    producer = Producer({'bootstrap.servers': bootstrap, 'acks': 'all', 'enable.idempotence': True})
    errors = []

    def delivered(error, _message):
        if error is not None:
            errors.append(str(error))

    for index in range(int(first), int(first) + int(count)):
        producer.produce(topic, key=f'k{index}', value=f'v{index}', on_delivery=delivered)
    emit('produced', unsent=producer.flush(30), errors=errors)


def consume(bootstrap, topic, group, instance, strategy, session_ms):
    config = {
        'bootstrap.servers': bootstrap,
        'group.id': group,
        'client.id': f'{group}-{instance}',
        'auto.offset.reset': 'earliest',
        'enable.auto.commit': False,
        'partition.assignment.strategy': strategy,
        'session.timeout.ms': int(session_ms),
        # Members learn of a rebalance from their heartbeats: a short interval keeps the test short.
        'heartbeat.interval.ms': 500,
    }
    if instance != '-':
        config['group.instance.id'] = instance
    consumer = Consumer(config)
    # Per partition: the next offset to commit (one past the last record consumed), and the last committed.
    consumed = {}
    committed = {}

    def commit(partitions):
        """Commits what was consumed of `partitions`, retrying while the group completes a rebalance."""
        offsets = [TopicPartition(topic, partition, consumed[partition]) for partition in partitions if consumed.get(partition, -1) != committed.get(partition, -1)]
        if not offsets:
            return
        for attempt in range(COMMIT_ATTEMPTS):
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
                for offset in offsets:
                    committed[offset.partition] = offset.offset
                emit('committed', offsets={str(offset.partition): offset.offset for offset in offsets})
                return
            except KafkaException as error:
                emit('commit-error', error=str(error), attempt=attempt)
                time.sleep(0.1)

    def on_assign(_consumer, partitions):
        emit('assign', partitions=sorted(partition.partition for partition in partitions))

    def on_revoke(_consumer, partitions):
        # What this member consumed of a partition is committed before another member may start it.
        commit([partition.partition for partition in partitions])
        for partition in partitions:
            consumed.pop(partition.partition, None)
        emit('revoke', partitions=sorted(partition.partition for partition in partitions))

    def on_lost(_consumer, partitions):
        emit('lost', partitions=sorted(partition.partition for partition in partitions))

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    stop = threading.Event()

    def wait_for_stdin_to_close():
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_for_stdin_to_close, daemon=True).start()
    last_commit_s = time.monotonic()
    while not stop.is_set():
        message = consumer.poll(0.1)
        if message is not None:
            if message.error():
                emit('error', error=str(message.error()))
            else:
                emit('record', partition=message.partition(), offset=message.offset(), value=message.value().decode())
                consumed[message.partition()] = message.offset() + 1
        if time.monotonic() - last_commit_s >= COMMIT_INTERVAL_S:
            commit(list(consumed))
            last_commit_s = time.monotonic()
    commit(list(consumed))
    consumer.close()
    emit('closed')


COMMANDS = {'create': create, 'produce': produce, 'consume': consume}

if __name__ == '__main__':
    COMMANDS[sys.argv[1]](*sys.argv[2:])
