# syntax=docker/dockerfile:1
#
# The step 8 controller (the one with leader election, probes and metrics)
# as a container image: a static (musl) binary on a distroless, non-root
# base. manifests/controller.yaml runs it.
#
#   docker build -t sample-controller-rs:latest .
#   kind load docker-image sample-controller-rs:latest --name sample
#
# No Docker engine runs in this project's CI, so CI never builds this file.
# It builds the same static binary with the same cargo command as below and
# runs it against a real control plane instead (tests/image.rs).

FROM rust:1.95-bookworm AS build
# musl-tools provides musl-gcc, which compiles ring's C and assembly for musl.
RUN rustup target add x86_64-unknown-linux-musl \
 && apt-get update \
 && apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The cache mounts keep the registry and target/ between builds (BuildKit).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --target x86_64-unknown-linux-musl --bin step-8 \
 && cp target/x86_64-unknown-linux-musl/release/step-8 /sample-controller

# No shell, no libc, no package manager: CA certificates, /etc/passwd with the
# user nonroot (65532), and the binary.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /sample-controller /sample-controller
USER 65532:65532
ENTRYPOINT ["/sample-controller"]
