#!/usr/bin/env bash
# A pool of N sandbox stacks on one machine, for the benchmark runner's -sandbox-pool: deploy/compose.yaml started N
# times as the compose projects goalbox-pool-1 ... goalbox-pool-N, each with its own workspace and cache volumes, its
# own bearer token and its own two ports on 127.0.0.1, and the pool file that lists them. See docs/deploy.md.
#
#	scripts/compose-pool.sh up N [POOL_FILE]   build the images once, start N stacks, wait until healthy, write
#	                                           POOL_FILE (default deploy/pool.txt, mode 0600: it holds the tokens)
#	scripts/compose-pool.sh down N             stop and remove the N stacks and their volumes
#	scripts/compose-pool.sh config N           print each project's resolved configuration (docker compose config)
#
# Stack i (1-based) publishes the filesystem server on GOALBOX_POOL_PORT+2(i-1) and the executor on the port after
# it; GOALBOX_POOL_PORT defaults to 7201, away from the single stack's 7101/7102. GOALBOX_POOL_BUILD=0 skips the
# build and runs the goalbox/* images already there; GOALBOX_POOL_PROJECT changes the projects' prefix. Then:
#
#	go run ./agent -benchmarks -sandbox-pool deploy/pool.txt -languages go,python -model ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
compose_file=$repo/deploy/compose.yaml
base=${GOALBOX_POOL_PORT:-7201}

usage() {
	sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
[ $# -ge 2 ] || usage
cmd=$1 n=$2
case $n in '' | *[!0-9]* | 0) echo "compose-pool: N must be a whole number of stacks, 1 or more, not '$n'" >&2; exit 2 ;; esac
pool_file=${3:-$repo/deploy/pool.txt}

project() { echo "${GOALBOX_POOL_PROJECT:-goalbox-pool}-$1"; }
fs_port() { echo $((base + 2 * ($1 - 1))); }
exec_port() { echo $((base + 2 * ($1 - 1) + 1)); }

# stack I ARGS... runs docker compose for stack I with its ports (and, for up, its token) in the environment.
stack() {
	local i=$1 token=${TOKEN:-}
	shift
	# GOALBOX_UNPROTECT=all: a pool's workspaces are nobody's project and are emptied between exercises, which a
	# protected .git/config (after a model's git init) would refuse.
	GOALBOX_FS_PORT=$(fs_port "$i") GOALBOX_EXEC_PORT=$(exec_port "$i") GOALBOX_TOKEN=$token GOALBOX_UNPROTECT=${GOALBOX_UNPROTECT:-all} \
		docker compose -p "$(project "$i")" -f "$compose_file" "$@"
}

wait_healthy() {
	local port
	for port in "$@"; do
		for _ in $(seq 300); do
			curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && continue 2
			sleep 0.2
		done
		echo "compose-pool: nothing healthy on 127.0.0.1:$port after 60s (docker compose -p ... logs)" >&2
		return 1
	done
}

case $cmd in
up)
	# One build for all stacks: they run the same images (GOALBOX_POOL_BUILD=0 uses the images already there).
	if [ "${GOALBOX_POOL_BUILD:-1}" != 0 ]; then
		stack 1 build
	fi
	umask 077
	tmp=$pool_file.tmp
	{
		echo "# $n goalbox sandbox stacks made by scripts/compose-pool.sh: FS_URL EXEC_URL FS_TOKEN EXEC_TOKEN"
		for i in $(seq "$n"); do
			TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
			TOKEN=$TOKEN stack "$i" up -d --no-build >&2
			wait_healthy "$(fs_port "$i")" "$(exec_port "$i")"
			echo "http://127.0.0.1:$(fs_port "$i")/mcp http://127.0.0.1:$(exec_port "$i")/mcp $TOKEN $TOKEN"
		done
	} >"$tmp"
	mv "$tmp" "$pool_file"
	echo "compose-pool: $n stacks up; pool file $pool_file" >&2
	;;
down)
	for i in $(seq "$n"); do
		stack "$i" down -v
	done
	;;
config)
	for i in $(seq "$n"); do
		TOKEN=example stack "$i" config
	done
	;;
*) usage ;;
esac
