# Prometheus from Debian's prometheus package on the Debian base: the stand-in for the official
# `prom/prometheus` image, started the same way (the compose file's command is the server's arguments) and
# keeping its data under /prometheus as that image does.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /prometheus && chown nobody:nogroup /prometheus
USER nobody
WORKDIR /prometheus
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus", "--storage.tsdb.path=/prometheus"]
