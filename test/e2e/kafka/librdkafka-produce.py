"""librdkafka (Debian's python3-confluent-kafka) as an idempotent producer through a leader failover: produces
`count` keyed records (key k<i>, value <i>) to an existing topic with enable.idempotence and acks=all, keeping
at most `outstanding` records unacknowledged, and prints a line {"acknowledged": n} each time another 500 are
acknowledged, so the test can kill or stop a leader while records are in flight. At the end it waits for every
delivery report and prints {"delivered": [[value, partition, offset], ...], "errors": [...], "unflushed": n}:
the offset librdkafka says each record was stored at, as the broker acknowledged it."""
import json
import sys

from confluent_kafka import Producer

bootstrap, topic, count, outstanding = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

# librdkafka's own request timeout (30 s) outlasts the test's pause of a leader past the lease, so requests in
# flight to it are answered by it once it resumes; message.timeout.ms leaves the retries the whole failover.
producer = Producer({'bootstrap.servers': bootstrap, 'enable.idempotence': True, 'acks': 'all', 'linger.ms': 5,
                     'message.timeout.ms': 120000})
delivered = []
errors = []


def report(error, message):
    if error is not None:
        errors.append(f'{message.value().decode()}: {error}')
        return
    delivered.append([message.value().decode(), message.partition(), message.offset()])
    if len(delivered) % 500 == 0:
        print(json.dumps({'acknowledged': len(delivered)}), flush=True)


for index in range(count):
    while len(delivered) + len(errors) < index - outstanding:
        producer.poll(0.05)
    while True:
        try:
            producer.produce(topic, key=f'k{index}', value=str(index), on_delivery=report)
            break
        except BufferError:
            producer.poll(0.05)
    producer.poll(0)
unflushed = producer.flush(180)
print(json.dumps({'delivered': delivered, 'errors': errors[:20], 'unflushed': unflushed}), flush=True)
