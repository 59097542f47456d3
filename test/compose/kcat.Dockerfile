# kcat (librdkafka's command-line client) from Debian on the local Debian base, for the compose tests: a Kafka
# client in a container of the stack's network, reaching the data nodes at the addresses they advertise.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends kcat >/dev/null \
 && rm -rf /var/lib/apt/lists/*
ENTRYPOINT ["kcat"]
