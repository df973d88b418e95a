#!/usr/bin/env bash
# k8s-node.sh runs a one-node Kubernetes cluster on this machine for tests/k8s: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and a kubelet, over a containerd of its own (Debian's containerd and runc)
# with Debian's CNI plugins (a bridge), and the project's images loaded into it from the local Docker build (no
# registry is reachable here). Everything it makes is named goalbox-k8s-node: its containerd socket, state folder,
# bridge and cgroups; Docker's own containerd is left alone.
#
#   scripts/k8s-node.sh build     build kubelet, kube-controller-manager and kube-scheduler (and, through
#                                 scripts/k8s-apiserver.sh, kube-apiserver, etcd, kubectl) once into the cache
#   scripts/k8s-node.sh start     start the node (root; builds first), load the images, wait until the node is
#                                 Ready; prints the kubeconfig. A second start finds it running and only reloads
#                                 images that changed.
#   scripts/k8s-node.sh stop      stop every process it started, their containers and the bridge
#   scripts/k8s-node.sh build-runtime   build containerd 2 and runc 1.3 once into the cache, print the folder
#                                 (GOALBOX_K8S_RUNTIME_DIR=<it> start runs Pods in user namespaces)
#
# The binaries come from the build module tests/k8s/nodebuild (same Kubernetes version as tests/k8s/build), built
# with GOWORK=off into $CACHE_DIR/k8s/<version>/ beside the API server's; a change to its go.mod, go.sum or the flags
# rebuilds. Cold: see docs/kubernetes-node.md for the measured figures.
#
# This machine mounts cgroup v1; kubelets refuse it by default since 1.35, so the kubelet's configuration says
# failCgroupV1: false. Debian's containerd 1.6 cannot run Pods in user namespaces (containerd 2.0 can): the base's
# sandboxes are applied here with overlays/host-users, and the kubelet's podPidsLimit bounds each Pod's processes.
#
# Environment: GOALBOX_CACHE_DIR (the cache folder), GOALBOX_K8S_NODE_DIR (state, default
# /var/lib/goalbox-k8s-node), GOALBOX_K8S_POD_CIDR (the bridge's Pod range, default 10.244.77.0/24),
# GOALBOX_K8S_IMAGE_TAG (the tag of the project's images to load, default latest), GOALBOX_K8S_RUNTIME_DIR (a folder
# holding containerd, containerd-shim-runc-v2 and runc to run instead of Debian's: containerd 2 and runc 1.2 or
# later run Pods in user namespaces; docs/kubernetes-node.md).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/scripts/lib.sh" # CACHE_DIR

say() { printf 'k8s-node: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

build=$repo/tests/k8s/nodebuild
version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ { print $2; exit }' "$build/go.mod")
[ -n "$version" ] || die "$build/go.mod requires no version of k8s.io/kubernetes"
bin=$CACHE_DIR/k8s/$version
state=${GOALBOX_K8S_NODE_DIR:-/var/lib/goalbox-k8s-node}
pod_cidr=${GOALBOX_K8S_POD_CIDR:-10.244.77.0/24}
node=goalbox-k8s-node
bridge=gbk8snode0
runtime_dir=${GOALBOX_K8S_RUNTIME_DIR:-}

build_node() {
	"$repo/scripts/k8s-apiserver.sh" >/dev/null
	minor=${version#v1.}
	minor=${minor%%.*}
	ldflags="-s -w"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
	done
	stamp=$( (cat "$build/go.mod" "$build/go.sum" "$repo/tests/k8s/pause/main.go"; echo "$ldflags") | sha256sum | cut -c1-16)
	if [ -x "$bin/kubelet" ] && [ -x "$bin/kube-controller-manager" ] && [ -x "$bin/kube-scheduler" ] &&
		[ -x "$bin/pause" ] && [ "$(cat "$bin/stamp-node" 2>/dev/null)" = "$stamp" ]; then
		say "node binaries cached in $bin"
		return
	fi
	mkdir -p "$bin"
	log=$bin/build-node.log
	say "building kubelet, kube-controller-manager, kube-scheduler ($version) into $bin (log: $log; minutes on 2 cores)"
	start=$(date +%s)
	tmp=$(mktemp -d "$bin/.build.XXXXXX")
	# Static, no cgo, as Kubernetes' releases build them.
	if ! (cd "$build" && GOWORK=off GOFLAGS= CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" \
		k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler &&
		cd "$repo/tests/k8s" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/pause" ./pause) >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		rm -rf "$tmp"
		die "build failed (log: $log)"
	fi
	for b in kubelet kube-controller-manager kube-scheduler pause; do mv "$tmp/$b" "$bin/$b"; done
	rm -rf "$tmp"
	echo "$stamp" >"$bin/stamp-node"
	say "built in $(($(date +%s) - start))s"
}

# The runtime that runs Pods in user namespaces (hostUsers: false), which Debian 12's containerd 1.6 and runc 1.1
# cannot: runc and containerd from the Go module proxy into $CACHE_DIR/k8s/runtime-<versions>/ (runc needs cgo and
# libseccomp-dev). Not built by start: cold, it took 24 minutes here at load 20 to 44 (containerd alone 20), which
# the test command's budget cannot take; start runs it when GOALBOX_K8S_RUNTIME_DIR names that folder.
runc_version=v1.3.7
containerd_version=v2.1.9
runtime_cache=$CACHE_DIR/k8s/runtime-runc-$runc_version-containerd-$containerd_version
build_runtime() {
	if [ -x "$runtime_cache/runc" ] && [ -x "$runtime_cache/containerd" ] && [ -x "$runtime_cache/containerd-shim-runc-v2" ]; then
		say "runtime cached in $runtime_cache"
		echo "$runtime_cache"
		return
	fi
	dpkg -s libseccomp-dev >/dev/null 2>&1 || apt-get install -y -q libseccomp-dev >/dev/null ||
		die "runc needs libseccomp-dev (apt-get install libseccomp-dev)"
	mkdir -p "$runtime_cache"
	local tmp start log=$runtime_cache/build.log
	tmp=$(mktemp -d "$runtime_cache/.build.XXXXXX")
	start=$(date +%s)
	say "building runc $runc_version and containerd $containerd_version into $runtime_cache (log: $log; long on 2 cores)"
	# runc as its Makefile builds it (the seccomp tag, cgo); containerd's module has exclude directives, which go
	# install refuses, so it is built inside its own module, from the module cache, without the snapshotters that
	# need C headers.
	local dir
	if ! (GOWORK=off GOBIN="$tmp" CGO_ENABLED=1 go install -trimpath -tags seccomp -ldflags "-s -w -X main.version=${runc_version#v}" \
		"github.com/opencontainers/runc@$runc_version" &&
		dir=$(GOWORK=off go mod download -json "github.com/containerd/containerd/v2@$containerd_version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p') &&
		cd "$dir" && GOWORK=off CGO_ENABLED=0 go build -trimpath -tags "no_btrfs no_devmapper no_zfs no_aufs" \
		-ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd_version" -o "$tmp/" \
		./cmd/containerd ./cmd/containerd-shim-runc-v2) >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		rm -rf "$tmp"
		die "runtime build failed (log: $log)"
	fi
	mv "$tmp"/* "$runtime_cache/"
	rm -rf "$tmp"
	say "built in $(($(date +%s) - start))s"
	echo "$runtime_cache"
}

kubectl() { "$bin/kubectl" --kubeconfig "$state/admin.kubeconfig" "$@"; }

# running NAME: the process started as NAME is alive: its pid file names a process whose command line has NAME (a
# pid file left by a run whose processes were ended may name another process since).
running() {
	local pid
	pid=$(cat "$state/run/$1.pid" 2>/dev/null) || return 1
	[ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$1"
}

# daemon NAME CMD...: start CMD in the background (its own session, so a stop reaches its children), output in
# run/NAME.log, pid in run/NAME.pid; nothing when it runs already.
daemon() {
	local name=$1
	shift
	running "$name" && return
	setsid "$@" >>"$state/run/$name.log" 2>&1 </dev/null &
	echo $! >"$state/run/$name.pid"
}

# wait_for WHAT SECONDS CMD...: poll CMD until it succeeds.
wait_for() {
	local what=$1 secs=$2
	shift 2
	local end=$(($(date +%s) + secs))
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$end" ] || die "$what not up after ${secs}s (logs: $state/run/)"
		sleep 1
	done
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

kubeconfig() { # kubeconfig FILE TOKEN
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $node
  cluster: {server: "https://127.0.0.1:$api_port", insecure-skip-tls-verify: true}
users:
- name: user
  user: {token: "$2"}
contexts:
- name: $node
  context: {cluster: $node, user: user}
current-context: $node
EOF
	chmod 600 "$1"
}

# prepare makes, once, the state folder: ports, tokens, keys, the configurations.
prepare() {
	mkdir -p "$state/run" "$state/pki" "$state/cni" "$state/seccomp"
	if [ ! -f "$state/node.env" ]; then
		{
			echo "etcd_port=$(free_port)"
			echo "etcd_peer_port=$(free_port)"
			echo "api_port=$(free_port)"
			echo "kubelet_port=$(free_port)"
		} >"$state/node.env.tmp"
		mv "$state/node.env.tmp" "$state/node.env"
	fi
	. "$state/node.env"
	node_ip=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "src") { print $(i + 1); exit } }')
	[ -n "$node_ip" ] || node_ip=127.0.0.1
	pki=$state/pki
	if [ ! -f "$pki/tokens.csv" ]; then
		# One token per component, each its own user: the kubelet as system:node:<name> (the Node authorizer and
		# NodeRestriction confine it to its Pods), the controllers and scheduler as the users bootstrap RBAC binds.
		tok() { openssl rand -hex 24; }
		admin=$(tok) kubelet=$(tok) kcm=$(tok) sched=$(tok)
		{
			echo "$admin,goalbox-admin,goalbox-admin,\"system:masters\""
			echo "$kubelet,system:node:$node,system:node:$node,\"system:nodes\""
			echo "$kcm,system:kube-controller-manager,system:kube-controller-manager"
			echo "$sched,system:kube-scheduler,system:kube-scheduler"
		} >"$pki/tokens.csv.tmp"
		openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
		# The API server's client certificate for the kubelet's port (logs, exec), from a CA only the kubelet trusts.
		openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=goalbox-k8s-node-kubelet-ca" \
			-keyout "$pki/kubelet-ca.key" -out "$pki/kubelet-ca.crt" 2>/dev/null
		openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver-kubelet-client/O=system:masters" \
			-keyout "$pki/apiserver-kubelet.key" -out "$pki/apiserver-kubelet.csr" 2>/dev/null
		openssl x509 -req -in "$pki/apiserver-kubelet.csr" -CA "$pki/kubelet-ca.crt" -CAkey "$pki/kubelet-ca.key" \
			-CAcreateserial -days 3650 -out "$pki/apiserver-kubelet.crt" 2>/dev/null
		chmod 600 "$pki"/*.key "$pki/tokens.csv.tmp"
		mv "$pki/tokens.csv.tmp" "$pki/tokens.csv"
	fi
	token() { awk -F, -v u="$1" '$2 == u { print $1 }' "$pki/tokens.csv"; }
	kubeconfig "$state/admin.kubeconfig" "$(token goalbox-admin)"
	kubeconfig "$state/kubelet.kubeconfig" "$(token "system:node:$node")"
	kubeconfig "$state/controller-manager.kubeconfig" "$(token system:kube-controller-manager)"
	kubeconfig "$state/scheduler.kubeconfig" "$(token system:kube-scheduler)"

	# GOALBOX_K8S_RUNTIME_DIR's runc instead of the one on PATH.
	local runc_binary=""
	[ -z "$runtime_dir" ] || runc_binary="BinaryName = \"$runtime_dir/runc\""
	cat >"$state/containerd.toml" <<EOF
version = 2
root = "$state/containerd"
state = "/run/goalbox-k8s-node/containerd"
[grpc]
  address = "/run/goalbox-k8s-node/containerd.sock"
[ttrpc]
  address = "/run/goalbox-k8s-node/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  # Built here and imported (scripts/k8s-node.sh): nothing is pulled.
  sandbox_image = "docker.io/goalbox/pause:local"
  # No process here holds CAP_SYS_RESOURCE (the machine's bounding set lacks it), which lowering an oom_score_adj
  # needs: the kubelet asks -998 for every Pod's pause container and runc fails to start it ("failed to update
  # /proc/self/oom_score_adj: Permission denied"). This keeps each asked score at or above containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        $runc_binary
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni"
EOF
	# One bridge on the node, Pods' addresses from pod_cidr, NAT for their way out: Debian's plugins. None of them
	# enforces NetworkPolicy (docs/kubernetes-node.md).
	cat >"$state/cni/10-goalbox.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "goalbox-k8s-node",
  "plugins": [
    {"type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$pod_cidr"}]], "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": "$state/cni-ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
EOF
	cat >"$state/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine mounts cgroup v1, which kubelets refuse by default since 1.35.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix:///run/goalbox-k8s-node/containerd.sock
address: $node_ip
port: $kubelet_port
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$pki/kubelet-ca.crt"}
authorization:
  mode: AlwaysAllow
# Each Pod's processes together, in its pids cgroup: the bound per sandbox whatever the Pod's uids.
podPidsLimit: 4096
failSwapOn: false
# The images are loaded, not pulled: never collect them, whatever the disk holds; evict on nothing but a full disk.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"nodefs.available": "1%", "imagefs.available": "1%", "memory.available": "100Mi"}
serializeImagePulls: false
resolvConf: /etc/resolv.conf
EOF
}

load_images() {
	# goalbox/pause:local: the pause binary alone.
	local ctx
	ctx=$(mktemp -d)
	cp "$bin/pause" "$ctx/pause"
	printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$ctx/Dockerfile"
	if ! docker build -q -t goalbox/pause:local "$ctx" >"$state/run/pause-build.log" 2>&1; then
		cat "$state/run/pause-build.log" >&2
		die "building goalbox/pause:local failed"
	fi
	rm -rf "$ctx"
	local img id
	# GOALBOX_K8S_IMAGE_TAG: the tag of the project's images to load (latest by default; TestSandboxesOnNode runs the same).
	local tag=${GOALBOX_K8S_IMAGE_TAG:-latest}
	for img in goalbox/pause:local "goalbox/filesystem:$tag" "goalbox/executor:$tag" "goalbox/agent:$tag"; do
		id=$(docker image inspect -f '{{.Id}}' "$img" 2>/dev/null) || { say "no image $img in Docker: not loaded (docker compose -f deploy/compose.yaml build)"; continue; }
		local mark="$state/images/${img//[\/:]/_}"
		[ "$(cat "$mark" 2>/dev/null)" = "$id" ] && continue
		say "loading $img into the node's containerd"
		docker save "$img" | ctr -a /run/goalbox-k8s-node/containerd.sock -n k8s.io images import - >/dev/null
		mkdir -p "$state/images"
		echo "$id" >"$mark"
	done
}

start_node() {
	[ "$(id -u)" = 0 ] || die "start needs root (containerd and the kubelet)"
	# Debian's packages: containerd and runc come with docker.io (scripts/setup-docker.sh), the CNI plugins do not.
	if [ ! -x /usr/lib/cni/bridge ] || ! command -v containerd >/dev/null || ! command -v runc >/dev/null; then
		say "installing containerd, runc and containernetworking-plugins from Debian"
		apt-get install -y -q containerd runc containernetworking-plugins >"$state.apt.log" 2>&1 ||
			{ tail -n 20 "$state.apt.log" >&2; die "apt-get install failed (log: $state.apt.log)"; }
	fi
	build_node
	prepare
	local pki=$state/pki
	mkdir -p /run/goalbox-k8s-node
	daemon etcd "$bin/etcd" --name "$node" --data-dir "$state/etcd" \
		--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
		--listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
		--initial-cluster "$node=http://127.0.0.1:$etcd_peer_port" --unsafe-no-fsync --log-level warn
	daemon kube-apiserver "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
		--endpoint-reconciler-type none --cert-dir "$pki/apiserver" --token-auth-file "$pki/tokens.csv" \
		--authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction,PodSecurity \
		--service-account-issuer https://kubernetes.default.svc \
		--service-account-key-file "$pki/sa.key" --service-account-signing-key-file "$pki/sa.key" \
		--service-cluster-ip-range 10.96.0.0/16 \
		--kubelet-client-certificate "$pki/apiserver-kubelet.crt" --kubelet-client-key "$pki/apiserver-kubelet.key" \
		--kubelet-preferred-address-types InternalIP
	wait_for kube-apiserver 180 kubectl get --raw /readyz
	daemon kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$state/controller-manager.kubeconfig" \
		--authentication-kubeconfig "$state/controller-manager.kubeconfig" --authorization-kubeconfig "$state/controller-manager.kubeconfig" \
		--use-service-account-credentials --service-account-private-key-file "$pki/sa.key" \
		--root-ca-file "$pki/apiserver/apiserver.crt" --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false
	daemon kube-scheduler "$bin/kube-scheduler" --kubeconfig "$state/scheduler.kubeconfig" \
		--authentication-kubeconfig "$state/scheduler.kubeconfig" --authorization-kubeconfig "$state/scheduler.kubeconfig" \
		--bind-address 127.0.0.1 --secure-port 0 --leader-elect=false
	# A runtime folder of one's own goes first in containerd's PATH, where it finds its shim.
	daemon containerd env PATH="${runtime_dir:+$runtime_dir:}$PATH" "${runtime_dir:+$runtime_dir/}containerd" --config "$state/containerd.toml"
	wait_for containerd 60 ctr -a /run/goalbox-k8s-node/containerd.sock version
	load_images
	daemon kubelet "$bin/kubelet" --config "$state/kubelet.yaml" --kubeconfig "$state/kubelet.kubeconfig" \
		--hostname-override "$node" --node-ip "$node_ip" --root-dir "$state/kubelet" --cert-dir "$pki/kubelet"
	wait_for "node $node Ready" 180 kubectl wait --for=condition=Ready "node/$node" --timeout=5s
	say "node $node Ready; kubeconfig: $state/admin.kubeconfig"
	echo "$state/admin.kubeconfig"
}

stop_node() {
	local name pid
	# The kubelet first, then the Pods' containers (through containerd), then the rest.
	for name in kubelet; do
		running "$name" && kill "$(cat "$state/run/$name.pid")" 2>/dev/null || true
	done
	if running containerd; then
		local ctr=(ctr -a /run/goalbox-k8s-node/containerd.sock -n k8s.io)
		for c in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks kill -s KILL "$c" 2>/dev/null || true; done
		sleep 1
		for c in $("${ctr[@]}" containers ls -q 2>/dev/null); do "${ctr[@]}" tasks delete "$c" >/dev/null 2>&1 || true; done
	fi
	for name in kube-scheduler kube-controller-manager containerd kube-apiserver etcd; do
		if running "$name"; then
			pid=$(cat "$state/run/$name.pid")
			kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
			for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
		fi
		rm -f "$state/run/$name.pid"
	done
	rm -f "$state/run/kubelet.pid"
	# A shim whose task was killed outlives its containerd (containerd 2's shims do): ours name our socket.
	pkill -f -- "containerd-shim-runc-v2 .*-address /run/goalbox-k8s-node/containerd.sock" 2>/dev/null || true
	ip link delete "$bridge" 2>/dev/null || true
	# The bridge plugin's NAT rules for the Pods (a chain each, named in a comment after this network): the Pods were
	# killed, not torn down through CNI, so their rules are removed here.
	local rule chain
	iptables -t nat -S POSTROUTING 2>/dev/null | grep -F 'name: \"goalbox-k8s-node\"' | while read -r rule; do
		chain=$(sed -n 's/.* -j \(CNI-[0-9a-f]*\)$/\1/p' <<<"$rule")
		eval "iptables -t nat ${rule/-A /-D }" || true
		if [ -n "$chain" ]; then iptables -t nat -F "$chain" && iptables -t nat -X "$chain" || true; fi
	done
	# What the kubelet and containerd mounted (the kubelet's folder on itself, Pods' volumes, sandboxes' /dev/shm,
	# containers' root filesystems), deepest first: nothing of them runs now.
	awk -v s="$state/" -v r=/run/goalbox-k8s-node/ 'index($2, s) == 1 || index($2, r) == 1 || $2 == s "kubelet" { print $2 }' /proc/mounts |
		sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
	# The Pods' addresses, all free now: else every stop would leak the running Pods' and a range of 254 runs out.
	rm -rf "$state/cni-ipam"
	say "stopped"
}

case "${1:-}" in
build) build_node ;;
build-runtime) build_runtime ;;
start) start_node ;;
stop) stop_node ;;
*) die "usage: $0 build|build-runtime|start|stop" ;;
esac
