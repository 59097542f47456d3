# NATS from Debian's nats-server package on the Debian base: the stand-in for the official `nats` image,
# started the same way (the compose file's command is the server's arguments).
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nats-server >/dev/null \
 && rm -rf /var/lib/apt/lists/*
EXPOSE 4222 6222 8222
ENTRYPOINT ["/usr/sbin/nats-server"]
