# A CI image with abxlua installed from its own .deb (README "Running in CI").
#
#   docker build --build-arg ABX_GIT_COMMIT="$(git rev-parse --short HEAD)" -t abxlua-ci .
#   docker run --rm --privileged --tmpfs /tmp:exec -v "$PWD:/work" abxlua-ci run scenarios/ \
#     --junit out/junit.xml
#
# Runs as root, on purpose: the local provider (`abxlua serve`, the default) makes bubblewrap
# namespaces, overlay mounts, veth links and nftables rules, which need root (or CAP_SYS_ADMIN
# and CAP_NET_ADMIN) inside a privileged container; as another user it stops with a usage error.
# A job that only runs against a cloud provider may pass `--user` to `docker run`.
# --tmpfs /tmp: serve keeps each sandbox's overlay upper dir under $TMPDIR (default /tmp), and an
# overlay root such as a container's cannot be an overlay's upper layer ("cannot mount the root
# overlay: Invalid argument"); a tmpfs or a volume there can.
#
# Checked without a Docker engine by tests/install/dockerfile.py: `lint` (pinned base, no ADD of
# URLs, apt lists cleaned...) in `make test`, `build` (these steps in a bwrap root) in make test-slow.
# The base is pinned to a Debian point release (12.11 is what the project is built and tested on);
# pin a digest (debian:12.11-slim@sha256:...) where the registry is reachable to resolve it.
ARG DEBIAN_TAG=12.11-slim

# --- build: compile abxlua and package it (cpack -G DEB; Depends computed by dpkg-shlibdeps) ---
FROM debian:${DEBIAN_TAG} AS build
# --version names this commit (there is no .git in the build context)
ARG ABX_GIT_COMMIT=unknown
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake make gcc libc6-dev pkg-config dpkg-dev binutils file \
      liblua5.4-dev lua5.4 lua-cjson-dev lua-argparse libcurl4-openssl-dev libyaml-dev \
      libmicrohttpd-dev libjansson-dev libssl-dev libarchive-dev zlib1g-dev nettle-dev libpng-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY engine/ engine/
COPY bindings/ bindings/
COPY proto/ proto/
COPY platform/ platform/
COPY lib/ lib/
COPY config/ config/
COPY docs/ docs/
COPY tests/ tests/
COPY README.md .env.example ./
# Only the binary: the test harnesses are not built (install does not depend on `all`).
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON \
      -DABX_GIT_COMMIT="${ABX_GIT_COMMIT}" \
 && cmake --build build -j "$(nproc)" --target abxlua \
 && cpack --config build/CPackConfig.cmake -G DEB -B /out

# --- the image: the .deb installed by apt (which resolves its Depends) ---------------------------
FROM debian:${DEBIAN_TAG}
COPY --from=build /out/ /tmp/abxlua-deb/
# ca-certificates: HTTPS to the cloud providers. sudo, git, curl, python3, python-is-python3: what
# E2B's base template offers inside a local sandbox, whose /usr is this image's (the .deb's
# Recommends, named here because --no-install-recommends leaves them out).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      /tmp/abxlua-deb/abxlua_*.deb ca-certificates sudo git curl python3 python-is-python3 \
      libnss-myhostname \
 && rm -rf /var/lib/apt/lists/* /tmp/abxlua-deb \
 && abxlua --version
WORKDIR /work
ENTRYPOINT ["abxlua"]
CMD ["--help"]
