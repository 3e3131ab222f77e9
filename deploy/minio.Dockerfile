# syntax=docker/dockerfile:1
#
# MinIO for compose.yaml, built from the same pinned source as `make dev`
# (MinIO publishes its community edition as source only; the Makefile's
# MINIO_VERSION and the default below must agree, deploy/composecheck checks
# it), with /probe for the healthcheck. Build context: the repository root.

# Built on the target platform: `go install pkg@version` cannot
# cross-compile into GOBIN.
FROM golang:1.26.8-bookworm AS build
ARG MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
ARG GOPROXY
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOWORK=off GOBIN=/out go install -trimpath github.com/minio/minio@${MINIO_VERSION} && \
    CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w" -o /out/probe ./libs/cmd/probe && \
    mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot@sha256:d093aa3e30dbadd3efe1310db061a14da60299baff8450a17fe0ccc514a16639
COPY --from=build /out/minio /minio
COPY --from=build /out/probe /probe
# A named volume mounted here starts with this owner, so MinIO can write.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
EXPOSE 9000 9001
ENTRYPOINT ["/minio"]
