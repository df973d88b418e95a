#!/usr/bin/env bash
# The test command: every module's tests (unit, MCP clients against real servers, attacks, Docker backend, the
# benchmark grader over the real Polyglot exercises when ../shared/polyglot-benchmark or GOALBOX_BENCHMARK_DIR is
# there, compose end to end, the Kubernetes manifests on a real API server), then the MCP conformance suite against
# both servers, every tool called through the MCP Inspector CLI, the MCP client libraries agent builders use
# (scripts/clients.sh), and the MCP Bundles with their server.json for the MCP registry.
#
# First it runs scripts/setup.sh, which installs what the tests need (Docker engine and local base images, Docker
# Compose, language toolchains, Node 22 for the conformance suite). That needs root; without root it says what is
# missing and the tests that need it skip with a message — except with CI=true, where a missing Docker fails, and so
# does every security test that cannot run here (pkg/ciskip; scripts/ci-skip-fails.sh checks it).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

start=$(date +%s)
if [ "${GOALBOX_SKIP_SETUP:-}" != 1 ]; then
  scripts/setup.sh
fi
# The Kubernetes control plane tests/k8s applies deploy/kubernetes to (kube-apiserver, etcd, kubectl): built from the
# Go module proxy once into the cache, like Compose (10 to 19 minutes cold on 2 cores, instant when cached). Needs
# no root. GOALBOX_K8S_TEST=0 skips the build and the test.
if [ "${GOALBOX_K8S_TEST:-}" != 0 ]; then
  echo "== Kubernetes control plane for tests/k8s"
  scripts/k8s-apiserver.sh >/dev/null
fi

modules=(pkg servers/filesystem servers/executor agent tests/k8s tests/load tests/agents examples)
echo "== gofmt"
unformatted=$(gofmt -l "${modules[@]}" ./*.go)
if [ -n "$unformatted" ]; then echo "gofmt: not formatted:"; echo "$unformatted"; exit 1; fi

echo "== one version of each shared dependency"
scripts/check-modules-test.sh
scripts/check-modules.sh

# vet and test each take every module's packages in one command, from the workspace root.
# "." is the repository's root module: the tests that read the whole repository (the docs, the import diagram).
pkgs=(.)
for m in "${modules[@]}"; do pkgs+=("./$m/..."); done

echo "== go vet"
go vet "${pkgs[@]}"

# The three commands cross-compiled, and go vet, for linux/amd64, linux/arm64, darwin/arm64, darwin/amd64 and
# windows/amd64: the filesystem server, the Docker backend and the agent run on macOS and Windows too.
# GOALBOX_CROSS=0 skips it.
if [ "${GOALBOX_CROSS:-}" != 0 ]; then
  echo "== cross-compile and go vet per platform"
  scripts/cross.sh
fi

# The compose end-to-end test (agent/compose_test.go) builds both images, minutes the first time: it runs wherever
# setup could install Docker (root), and always in CI. GOALBOX_COMPOSE_TEST=0 turns it off.
if [ "$(id -u)" = 0 ] || [ "${CI:-}" = true ]; then
  export GOALBOX_COMPOSE_TEST="${GOALBOX_COMPOSE_TEST:-1}"
fi

# The executor image (deploy/Dockerfile.exec) some tests run commands in (the vision example, the Kubernetes node
# profile under runc), and the filesystem server's, which the node's sandbox Pods run beside it: built here, before
# the tests, so that none finds them missing or stale; from the layer cache the compose tests share, seconds when
# nothing changed.
if [ "${GOALBOX_COMPOSE_TEST:-}" = 1 ]; then
  echo "== the executor and filesystem images"
  COMPOSE_BAKE=false docker compose -f deploy/compose.yaml -p goalbox-test-image build -q executor filesystem
fi

# The one-node Kubernetes cluster TestSandboxesOnNode runs the sandboxes on (scripts/k8s-node.sh,
# docs/kubernetes-node.md): kubelet, controller-manager and scheduler built once into the cache like the API server,
# containerd 2 and runc built once from the module proxy (Debian's containerd 1.6 cannot run the base's Pods in user
# namespaces, which TestPidsPerSandboxOnNode needs). Root only (CI is root); after the executor image, so the node
# runs the image just built; stopped when this script ends.
if [ "${GOALBOX_K8S_TEST:-}" != 0 ] && [ "$(id -u)" = 0 ]; then
  echo "== one-node Kubernetes cluster for tests/k8s"
  trap 'scripts/k8s-node.sh stop || true' EXIT
  runtime_dir=$(scripts/k8s-node.sh build-runtime)
  GOALBOX_K8S_RUNTIME_DIR=$runtime_dir scripts/k8s-node.sh start >/dev/null
fi

echo "== go test"
# One go test run over all modules of the workspace, so the summary lines come together at the end.
go test -count=1 -timeout 30m "$@" "${pkgs[@]}"

# The race detector over the packages where many goroutines share state — the servers' sessions and transports,
# the executor's tools, processes and kept outputs, the egress proxy — about a minute; the rest of the suite would
# take it several times over.
echo "== the race detector: pkg/mcpserve, execserver, its processes, outputs and egress"
go test -race -count=1 ./pkg/mcpserve/ ./servers/executor/execserver/ ./servers/executor/execserver/processes/ \
  ./servers/executor/execserver/outputs/ ./servers/executor/execserver/egress/

echo "== a security test that cannot run fails under CI=true (scripts/ci-skip-fails.sh)"
scripts/ci-skip-fails.sh

echo "== fuzzing the servers' HTTP and stdio entries (${GOALBOX_FUZZ_TIME:=60s} each)"
for target in ./pkg/mcpserve ./servers/filesystem ./servers/executor; do
  for f in FuzzHTTPEntry FuzzStdioEntry; do
    go test "$target" -run '^$' -fuzz "^$f\$" -fuzztime "$GOALBOX_FUZZ_TIME"
  done
done

echo "== MCP conformance suite"
scripts/conformance.sh

echo "== MCP Inspector CLI"
scripts/inspector.sh

echo "== MCP client libraries (TypeScript SDK 1.x and v2, OpenAI Agents SDK, LangChain, AI SDK), both transports"
scripts/clients.sh

echo "== MCP Bundles (built, validated and packed by mcpb, then served from the unpacked bundle) and server.json"
bundles=$(mktemp -d)
scripts/mcpb.sh "$bundles"
rm -rf "$bundles"

echo "== all tests passed in $(( $(date +%s) - start ))s"
