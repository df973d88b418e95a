#!/usr/bin/env bash
# Cross-compiles the three commands (./servers/filesystem, ./servers/executor, ./agent) for every platform goalbox
# supports, and runs go vet over every module's packages, tests included, once per platform (GOOS and GOARCH set).
# Linux runs everything; macOS and Windows run the filesystem server, the executor's Docker backend and the agent
# (docs/filesystem.md, "Platforms"). A file that uses a Unix-only call without a build tag fails here, not on a
# user's Mac.
#
#   scripts/cross.sh                              # all five platforms
#   scripts/cross.sh windows/amd64 darwin/arm64   # some
#
# Binaries are built with CGO_ENABLED=0 (as the images build them; a cross build has no C toolchain) into a
# temporary folder that is removed afterwards. With a warm build cache all five platforms take about 1.5 minutes on
# 2 cores after a change in pkg (15-20 s a platform, most of it linking three binaries); the first run, which
# builds the standard library for each platform, took about 5 minutes here. scripts/test.sh runs this after its go
# vet step (GOALBOX_CROSS=0 skips it there).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

platforms=("$@")
if [ ${#platforms[@]} -eq 0 ]; then
	platforms=(linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64)
fi
commands=(./servers/filesystem ./servers/executor ./agent)
pkgs=(./pkg/... ./servers/filesystem/... ./servers/executor/... ./agent/... ./tests/k8s/... ./tests/load/... ./examples/...)

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

failed=()
for p in "${platforms[@]}"; do
	goos=${p%/*} goarch=${p#*/}
	t0=$(date +%s)
	ok=1
	# -o DIR/ writes each command's binary into DIR (agent, filesystem, executor; .exe on Windows).
	if ! GOOS=$goos GOARCH=$goarch CGO_ENABLED=0 go build -o "$out/$goos-$goarch/" "${commands[@]}"; then
		echo "cross: build failed for $p" >&2
		ok=0
	fi
	if ! GOOS=$goos GOARCH=$goarch CGO_ENABLED=0 go vet "${pkgs[@]}"; then
		echo "cross: go vet failed for $p" >&2
		ok=0
	fi
	if [ $ok = 1 ]; then
		bins=$(cd "$out/$goos-$goarch" && ls | tr '\n' ' ')
		echo "cross: $p ok: built ${bins% }, vetted ($(($(date +%s) - t0))s)"
	else
		failed+=("$p")
	fi
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "cross: failed for ${failed[*]}" >&2
	exit 1
fi
