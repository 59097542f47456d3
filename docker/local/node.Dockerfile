# Node.js 20 on the Debian base that `npm run compose:up` makes with debootstrap: the Node.js binary of the
# machine that builds (copied in: nothing is downloaded), and the user `node` (uid 1000) of the official image.
# Build context: a folder holding `node` and this file.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
COPY node /usr/local/bin/node
RUN echo 'node:x:1000:1000::/home/node:/bin/sh' >> /etc/passwd \
 && echo 'node:x:1000:' >> /etc/group \
 && mkdir -p /home/node && chown 1000:1000 /home/node \
 && node --version
CMD ["node"]
