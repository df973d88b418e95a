# The goalbox filesystem MCP server: one static binary on an empty base, run as an unprivileged user.
#
#   docker build -f deploy/Dockerfile.fs -t goalbox/filesystem .        (from the repository root)
#   docker run --rm -p 127.0.0.1:7101:7101 -v goalbox-workspace:/workspace goalbox/filesystem
#
# Both goalbox images run as uid/gid 10001 and own /workspace, so files one server writes the other can change.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
WORKDIR /src
# Module files first, so the download layer survives source edits. go.work names every module, so all go.mod
# files must be there for the workspace to load.
COPY go.work go.work.sum go.mod ./
COPY pkg/go.mod pkg/go.sum pkg/
COPY servers/filesystem/go.mod servers/filesystem/go.sum servers/filesystem/
COPY servers/executor/go.mod servers/executor/go.sum servers/executor/
COPY agent/go.mod agent/go.sum agent/
COPY tests/k8s/go.mod tests/k8s/
COPY tests/load/go.mod tests/load/go.sum tests/load/
COPY tests/agents/go.mod tests/agents/
COPY examples/go.mod examples/go.sum examples/
# Cache mounts keep downloaded modules and compiled packages between builds (BuildKit, the default builder).
RUN --mount=type=cache,target=/go/pkg/mod cd servers/filesystem && go mod download
COPY pkg/ pkg/
COPY servers/filesystem/ servers/filesystem/
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -ldflags="-s -w" -o /out/filesystem ./servers/filesystem
COPY deploy/healthprobe/ /src/healthprobe/
RUN --mount=type=cache,target=/root/.cache/go-build \
    cd /src/healthprobe && GOWORK=off go build -ldflags="-s -w" -o /out/healthprobe .
# What the empty runtime needs: a user name for uid 10001 and a workspace folder it owns.
# /tmp is 1777, as on any system: Docker gives a tmpfs mounted on it (compose's) the mode of the image's folder, and
# the server writes a token it generated there (a COPY of the folder's contents alone would make it root's 0755).
RUN mkdir -p /rootfs/etc /rootfs/workspace /rootfs/checkpoints /rootfs-tmp/tmp && chmod 1777 /rootfs-tmp/tmp \
 && echo 'goalbox:x:10001:10001:goalbox:/tmp:/sbin/nologin' > /rootfs/etc/passwd \
 && echo 'goalbox:x:10001:' > /rootfs/etc/group

FROM scratch
COPY --from=build /rootfs/etc/ /etc/
COPY --from=build --chown=10001:10001 /rootfs/workspace /workspace
COPY --from=build --chown=10001:10001 /rootfs/checkpoints /checkpoints
COPY --from=build /rootfs-tmp/ /
COPY --from=build /out/filesystem /out/healthprobe /usr/local/bin/
USER 10001:10001
# In a container the server listens on all interfaces; publish the port on 127.0.0.1 only (deploy/compose.yaml does).
# Without a token given (GOALBOX_FS_TOKEN), the server generates one and writes it here: the root is read-only.
ENV GOALBOX_FS_ADDR=0.0.0.0:7101 \
    GOALBOX_FS_WORKSPACE=/workspace \
    GOALBOX_FS_CHECKPOINT_DIR=/checkpoints \
    GOALBOX_FS_TOKEN_FILE=/tmp/goalbox/token
# Checkpoints outside the workspace, where commands cannot change them. The user's home is /tmp, not the workspace:
# the server refuses a workspace that is its user's home (-allow-personal-workspace).
VOLUME /workspace /checkpoints
EXPOSE 7101
HEALTHCHECK --interval=10s --timeout=4s --start-period=5s --retries=3 \
    CMD ["/usr/local/bin/healthprobe", "http://127.0.0.1:7101/healthz"]
# The MCP registry lists this image (deploy/mcpb/filesystem/server.json) only if it carries the server's name.
LABEL io.modelcontextprotocol.server.name="io.github.goalbox/goalbox-filesystem"
ENTRYPOINT ["/usr/local/bin/filesystem"]
