# s3rver, the S3-compatible server `mink up` and the tests run (packages/devcluster/bin/s3rver-main.js), as
# MinIO's stand-in: from the mink image, with its objects on the /data volume (owned by node, so a new named
# volume is too). It creates the bucket at start and accepts only its own credentials (S3RVER / S3RVER).
ARG MINK_IMAGE
FROM ${MINK_IMAGE}
USER root
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 9000
CMD ["node", "--openssl-legacy-provider", "packages/devcluster/bin/s3rver-main.js", "--address", "0.0.0.0", "--port", "9000", "--directory", "/data", "--bucket", "mink"]
