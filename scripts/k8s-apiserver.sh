#!/usr/bin/env bash
# k8s-apiserver.sh builds the Kubernetes control plane that tests/k8s applies deploy/kubernetes to — kube-apiserver,
# etcd and kubectl, from the Go module proxy — once into the cache folder, and prints that folder. A second run finds
# the binaries and takes a second.
#
#   scripts/k8s-apiserver.sh                 build (or find) the binaries; prints the folder
#   cd tests/k8s && go test -count=1 -v .    start etcd + kube-apiserver on loopback and apply the manifests
#
# The versions come from the build module tests/k8s/build/go.mod (k8s.io/kubernetes and the etcd it requires); it is
# not in go.work, so it is built with GOWORK=off. The binaries go to $CACHE_DIR/k8s/<kubernetes version>/ (CACHE_DIR:
# scripts/lib.sh, /var/cache/goalbox for root, as Docker Compose's binary), where tests/k8s looks for them.
# Cold: 10 to 19 minutes on 2 cores, by the load (docs/deploy.md has the figures). Needs Go only, not root.
#
# Environment: GOALBOX_CACHE_DIR (the cache folder).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/scripts/lib.sh" # CACHE_DIR

say() { printf 'k8s-apiserver: %s\n' "$*" >&2; }
build=$repo/tests/k8s/build
version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ { print $2; exit }' "$build/go.mod")
[ -n "$version" ] || { say "$build/go.mod requires no version of k8s.io/kubernetes"; exit 1; }
bin=$CACHE_DIR/k8s/$version
# The version Kubernetes' own build stamps in (kubectl version, the API server's /version and its emulation
# version read it); unstamped, both say v0.0.0-master and kubectl version fails.
minor=${version#v1.}
minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
# The build module's go.mod and go.sum pin everything that goes in, the flags the rest: a change to either rebuilds.
stamp=$( (cat "$build/go.mod" "$build/go.sum"; echo "$ldflags") | sha256sum | cut -c1-16)

if [ -x "$bin/kube-apiserver" ] && [ -x "$bin/etcd" ] && [ -x "$bin/kubectl" ] && [ "$(cat "$bin/stamp" 2>/dev/null)" = "$stamp" ]; then
	say "cached in $bin"
	echo "$bin"
	exit 0
fi

mkdir -p "$bin"
log=$bin/build.log
say "building kube-apiserver, kubectl ($version) and etcd into $bin (log: $log; minutes on 2 cores)"
start=$(date +%s)
tmp=$(mktemp -d "$bin/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# -trimpath and no cgo, as compose's binary; -s -w: no symbol tables (the binaries are for tests, not debugging).
if ! (cd "$build" && GOWORK=off GOFLAGS= CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" \
	k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl go.etcd.io/etcd/server/v3) >"$log" 2>&1; then
	tail -n 30 "$log" >&2
	say "build failed (log: $log)"
	exit 1
fi
# etcd's main package is the module's root folder, "server": name the binary as etcd's releases do.
mv "$tmp/server" "$tmp/etcd"
for b in kube-apiserver kubectl etcd; do mv "$tmp/$b" "$bin/$b"; done
echo "$stamp" >"$bin/stamp"
say "built in $(($(date +%s) - start))s: $(cd "$bin" && ls kube-apiserver kubectl etcd | tr '\n' ' ')"
echo "$bin"
