# The CCM's container image: built from this workspace, run from a minimal runtime image
# (glibc and CA certificates, no shell) as a non-root user.
#
#   docker build -t cloudscale-cloud-controller-manager:0.1.0 .
#
# Checked with hadolint in ci/test (no Docker engine there to build it).

FROM rust:1.95-bookworm AS build
# aws-lc-rs (TLS) builds its C library with cmake.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends cmake \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p ccm --bin cloudscale-cloud-controller-manager \
    && cp target/release/cloudscale-cloud-controller-manager /cloudscale-cloud-controller-manager

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /cloudscale-cloud-controller-manager /usr/local/bin/cloudscale-cloud-controller-manager
USER 65532:65532
EXPOSE 10258
ENTRYPOINT ["/usr/local/bin/cloudscale-cloud-controller-manager"]
