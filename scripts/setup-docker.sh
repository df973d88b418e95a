#!/usr/bin/env bash
# setup-docker.sh prepares a Debian 12 machine to build and run goalbox's
# containers when no container registry can be reached:
#
#   1. installs docker.io and debootstrap from Debian when they are missing;
#   2. starts dockerd in the background when the Docker socket does not answer;
#   3. builds the base images deploy/Dockerfile.* name, under their usual names,
#      from things this machine already has: debian:bookworm-slim (debootstrap),
#      golang:<go minor>-bookworm (that plus this machine's Go) and busybox:latest
#      (Debian's busybox-static);
#   4. builds Docker Compose v2 from the Go module proxy and installs it as a
#      docker CLI plugin.
#
# With those in place the Dockerfiles stay ordinary: on a machine that can pull
# from Docker Hub none of this is needed. CI (.ci/run, as root) and a person run
# the same script; it is idempotent, and a second run takes seconds because the
# debootstrap root filesystem and the compose binary are cached.
#
# Environment (all optional):
#   GOALBOX_CACHE_DIR        cache folder (default /var/cache/goalbox as root,
#                            else ~/.cache/goalbox)
#   GOALBOX_COMPOSE_VERSION  compose module version (default v2.40.3)
#   GOALBOX_DEBIAN_MIRROR    Debian mirror (default: the one apt on this host uses)
#   GOALBOX_DOCKERD_LOG      dockerd log file (default /var/log/goalbox-dockerd.log)
#   GOALBOX_REBUILD_IMAGES=1 rebuild the base images even when they exist
set -euo pipefail

COMPOSE_VERSION=${GOALBOX_COMPOSE_VERSION:-v2.40.3}
DOCKERD_LOG=${GOALBOX_DOCKERD_LOG:-/var/log/goalbox-dockerd.log}
SUITE=bookworm
DEBIAN_IMAGE=debian:bookworm-slim
BUSYBOX_IMAGE=busybox:latest
ROOTFS_IMAGE=goalbox/debootstrap:$SUITE # the raw import; debian:bookworm-slim builds on it

. "$(cd "$(dirname "$0")" && pwd)/lib.sh" # CACHE_DIR

say() { printf 'setup-docker: %s\n' "$*"; }
die() {
	printf 'setup-docker: error: %s\n' "$*" >&2
	exit 1
}
need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root; run this script with sudo"; }

# step NAME CMD...: run CMD and print how long it took, so CI logs show where
# the time of a cold run goes.
TIMINGS=()
step() {
	local name=$1 start=$EPOCHREALTIME
	shift
	say "== $name"
	"$@"
	local secs
	secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	TIMINGS+=("$(printf '%-22s %7ss' "$name" "$secs")")
}

# quiet runs a command and shows its output only when it fails: the docker CLI
# warns about its legacy builder on every build, which is noise here.
quiet() {
	local out
	if ! out=$("$@" 2>&1); then
		printf '%s\n' "$out" >&2
		die "failed: $*"
	fi
}

image_label() { docker image inspect --format "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null || true; }

# --- 1. packages -----------------------------------------------------------

install_packages() {
	local missing=()
	command -v dockerd >/dev/null || missing+=(docker.io)
	command -v docker >/dev/null || missing+=(docker.io)
	command -v debootstrap >/dev/null || missing+=(debootstrap)
	if [ ${#missing[@]} = 0 ]; then
		say "docker.io and debootstrap are installed"
		return
	fi
	need_root "installing ${missing[*]}"
	say "installing ${missing[*]}"
	# docker.io's postinst starts the daemon through its init script and fails the
	# install when that fails (no init system here); this script starts dockerd
	# itself, so forbid service starts during the install unless a policy exists.
	local policy=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 0755 "$policy"
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" ca-certificates xz-utils >/dev/null || {
		[ -z "$policy" ] || rm -f "$policy"
		die "apt-get install ${missing[*]} failed"
	}
	[ -z "$policy" ] || rm -f "$policy"
}

# --- 2. the engine ---------------------------------------------------------

docker_answers() { timeout 10 docker version --format '{{.Server.APIVersion}}' >/dev/null 2>&1; }

# alive PID: the process exists and is not a zombie. A dockerd killed without
# being reaped (its parent gone, as after a CI run) stays in the process table
# as a zombie, which kill -0 and pgrep still report.
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

dockerd_alive() {
	local pid
	for pid in $(pgrep -x dockerd); do
		alive "$pid" && return 0
	done
	return 1
}

start_dockerd() {
	if docker_answers; then
		say "Docker engine answers (API $(docker version --format '{{.Server.APIVersion}}'))"
		return
	fi
	need_root "starting dockerd"
	if ! dockerd_alive; then
		# A pid file left by a dockerd that died makes the next one refuse to start.
		if [ -f /var/run/docker.pid ] && ! alive "$(cat /var/run/docker.pid)"; then
			rm -f /var/run/docker.pid
		fi
		mkdir -p "$(dirname "$DOCKERD_LOG")"
		say "starting dockerd, log in $DOCKERD_LOG"
		setsid nohup dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
	else
		say "dockerd is running but does not answer yet; waiting"
	fi
	local i
	for i in $(seq 1 120); do
		docker_answers && {
			say "Docker engine answers after ${i} checks"
			return
		}
		sleep 0.5
	done
	tail -n 30 "$DOCKERD_LOG" >&2 || true
	die "dockerd did not answer on /var/run/docker.sock within 60s (log above: $DOCKERD_LOG)"
}

# --- 3. base images ----------------------------------------------------------

# debian_mirror prints the Debian archive this host's apt uses, so the image's
# `apt-get install` goes the same way (the default archive, a mirror or a
# caching proxy). Both deb822 (.sources) and one-line formats are read; a host
# whose apt names no archive for the suite must set GOALBOX_DEBIAN_MIRROR.
debian_mirror() {
	if [ -n "${GOALBOX_DEBIAN_MIRROR:-}" ]; then
		echo "$GOALBOX_DEBIAN_MIRROR"
		return
	fi
	local uri
	uri=$(awk '
		/^URIs:/ { uris = $2 }
		/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "'$SUITE'") { print uris; exit } }
		/^deb / { for (i = 3; i <= NF; i++) if ($i == "'$SUITE'") { print ($2 ~ /^\[/ ? $3 : $2); exit } }
	' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -n1)
	if [ -z "$uri" ]; then
		echo "setup-docker: no Debian archive for $SUITE in /etc/apt/sources.list*; set GOALBOX_DEBIAN_MIRROR to one" >&2
		return 1
	fi
	echo "$uri"
}

debian_security_mirror() {
	local uri
	uri=$(awk '
		/^URIs:/ { uris = $2 }
		/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "'$SUITE'-security") { print uris; exit } }
		/^deb / { for (i = 3; i <= NF; i++) if ($i == "'$SUITE'-security") { print ($2 ~ /^\[/ ? $3 : $2); exit } }
	' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -n1)
	# Without a security archive in the host's sources, the image goes without one too.
	echo "$uri"
}

# rootfs_tarball debootstraps a minimal Debian once and caches it as a tarball
# shaped like the official slim image: deb822 sources, no docs, man pages or
# locales from later installs, no downloaded .debs or package lists kept.
rootfs_tarball() {
	local tarball=$CACHE_DIR/debootstrap-$SUITE-minbase-$(dpkg --print-architecture).tar
	if [ -s "$tarball" ]; then
		say "cached root filesystem $tarball" >&2
		echo "$tarball"
		return
	fi
	need_root "debootstrap"
	local mirror root
	mirror=$(debian_mirror)
	mkdir -p "$CACHE_DIR"
	root=$(mktemp -d "$CACHE_DIR/rootfs.XXXXXX")
	say "debootstrap --variant=minbase $SUITE from $mirror (about a minute)" >&2
	debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$CACHE_DIR/debootstrap.log" 2>&1 ||
		{
			tail -n 20 "$CACHE_DIR/debootstrap.log" >&2
			rm -rf "$root"
			die "debootstrap failed (log: $CACHE_DIR/debootstrap.log)"
		}
	rm -f "$root/etc/apt/sources.list" "$root/etc/hostname" "$root/etc/resolv.conf"
	printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
	cat >"$root/etc/apt/sources.list.d/debian.sources" <<-EOF
		Types: deb
		URIs: $mirror
		Suites: $SUITE $SUITE-updates
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	local security
	security=$(debian_security_mirror)
	if [ -n "$security" ]; then
		cat >>"$root/etc/apt/sources.list.d/debian.sources" <<-EOF

			Types: deb
			URIs: $security
			Suites: $SUITE-security
			Components: main
			Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		EOF
	fi
	# Like the official slim image: images stay small without asking each
	# Dockerfile to delete documentation.
	cat >"$root/etc/dpkg/dpkg.cfg.d/goalbox-slim" <<-'EOF'
		path-exclude /usr/share/doc/*
		path-include /usr/share/doc/*/copyright
		path-exclude /usr/share/man/*
		path-exclude /usr/share/info/*
		path-exclude /usr/share/locale/*
		path-include /usr/share/locale/locale.alias
		path-exclude /usr/share/lintian/*
	EOF
	cat >"$root/etc/apt/apt.conf.d/goalbox-container" <<-'EOF'
		APT::Keep-Downloaded-Packages "false";
		Acquire::Languages "none";
		Acquire::GzipIndexes "true";
	EOF
	rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
		"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/* \
		"$root"/var/log/*.log "$root"/var/log/apt/* "$root"/tmp/*
	tar --numeric-owner --xattrs -C "$root" -cf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
	rm -rf "$root"
	echo "$tarball"
}

# host_apt_config writes into DIR what the image needs to reach Debian and the
# Go module proxy the way this host does: its extra CA certificates (a TLS
# intercepting proxy or corporate CA; ca-certificates picks them up from
# /usr/local/share/ca-certificates when a Dockerfile installs it) and any apt
# proxy setting.
host_apt_config() {
	local dir=$1
	mkdir -p "$dir/ca" "$dir/apt"
	if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
		cp /usr/local/share/ca-certificates/*.crt "$dir/ca/"
	fi
	grep -hiE '^\s*Acquire::(https?|ftp)::Proxy' /etc/apt/apt.conf /etc/apt/apt.conf.d/* 2>/dev/null \
		>"$dir/apt/goalbox-proxy.conf" || true
}

build_debian_image() {
	local tarball ctx hash
	tarball=$(rootfs_tarball)
	ctx=$(mktemp -d)
	host_apt_config "$ctx"
	# The label records what went in, so a new host CA or a new tarball
	# rebuilds the image instead of leaving one that cannot reach the network.
	hash=$( (stat -c '%s %Y' "$tarball" && cat "$ctx"/ca/* "$ctx"/apt/*) 2>/dev/null | sha256sum | cut -c1-16)
	if [ -z "${GOALBOX_REBUILD_IMAGES:-}" ] && [ "$(image_label "$DEBIAN_IMAGE" goalbox.base)" = "$hash" ]; then
		say "$DEBIAN_IMAGE is up to date"
		rm -rf "$ctx"
		return
	fi
	if [ "$(image_label "$ROOTFS_IMAGE" goalbox.tarball)" != "$(stat -c '%s-%Y' "$tarball")" ]; then
		say "importing $tarball as $ROOTFS_IMAGE"
		docker import --change "LABEL goalbox.tarball=$(stat -c '%s-%Y' "$tarball")" \
			"$tarball" "$ROOTFS_IMAGE" >/dev/null
	fi
	cat >"$ctx/Dockerfile" <<-EOF
		FROM $ROOTFS_IMAGE
		COPY ca/ /usr/local/share/ca-certificates/
		COPY apt/ /etc/apt/apt.conf.d/
		ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
		LABEL goalbox.base=$hash
		CMD ["bash"]
	EOF
	say "building $DEBIAN_IMAGE"
	quiet docker build -q -t "$DEBIAN_IMAGE" "$ctx"
	rm -rf "$ctx"
}

# build_golang_image puts this machine's Go into a Debian image under the name
# the official one has, with the same layout and environment (GOPATH=/go,
# GOTOOLCHAIN=local, gcc for cgo, git and CA certificates for modules).
GO_IMAGE=
build_golang_image() {
	command -v go >/dev/null || die "go is not on PATH; goalbox needs Go 1.26 to build"
	local goroot version minor base want ctx
	goroot=$(go env GOROOT)
	version=$(go env GOVERSION)
	version=${version#go}
	minor=$(echo "$version" | cut -d. -f1,2)
	GO_IMAGE=golang:$minor-$SUITE
	base=$(docker image inspect --format '{{.Id}}' "$DEBIAN_IMAGE")
	want="$version@$base"
	if [ -z "${GOALBOX_REBUILD_IMAGES:-}" ] && [ "$(image_label "$GO_IMAGE" goalbox.go)" = "$want" ]; then
		say "$GO_IMAGE is up to date (Go $version)"
		return
	fi
	ctx=$(mktemp -d)
	cat >"$ctx/Dockerfile" <<-EOF
		FROM $DEBIAN_IMAGE
		RUN apt-get update \\
		 && apt-get install -y --no-install-recommends ca-certificates git gcc libc6-dev make pkg-config \\
		 && rm -rf /var/lib/apt/lists/*
		ENV GOLANG_VERSION=$version GOTOOLCHAIN=local GOPATH=/go
		ENV PATH=/go/bin:/usr/local/go/bin:\$PATH
		COPY go /usr/local/go
		RUN mkdir -p /go/src /go/bin && chmod -R 1777 /go
		WORKDIR /go
		LABEL goalbox.go=$want
	EOF
	say "building $GO_IMAGE from $goroot (Go $version)"
	# The context is the Dockerfile plus GOROOT renamed to go/, streamed as one
	# tar so nothing is copied on disk.
	tar -cf - -C "$ctx" Dockerfile -C "$goroot" --transform 's,^\.,go,' . |
		quiet docker build -q -t "$GO_IMAGE" -t "golang:$version-$SUITE" -
	rm -rf "$ctx"
}

# build_busybox_image imports Debian's static busybox as a tiny image, the
# smallest base with a shell, for tests and probes.
build_busybox_image() {
	if [ -z "${GOALBOX_REBUILD_IMAGES:-}" ] && docker image inspect "$BUSYBOX_IMAGE" >/dev/null 2>&1; then
		say "$BUSYBOX_IMAGE exists"
		return
	fi
	local tmp deb
	tmp=$(mktemp -d)
	deb=$(ls "$CACHE_DIR"/busybox-static_*.deb 2>/dev/null | head -n1 || true)
	if [ -z "$deb" ]; then
		mkdir -p "$CACHE_DIR"
		(cd "$tmp" && apt-get download busybox-static >/dev/null 2>&1) ||
			{
				apt-get update -qq && (cd "$tmp" && apt-get download busybox-static >/dev/null)
			} || die "could not download busybox-static from Debian"
		mv "$tmp"/busybox-static_*.deb "$CACHE_DIR/"
		deb=$(ls "$CACHE_DIR"/busybox-static_*.deb | head -n1)
	fi
	dpkg-deb -x "$deb" "$tmp/pkg"
	mkdir -p "$tmp/root/bin" "$tmp/root/etc" "$tmp/root/tmp" "$tmp/root/root" "$tmp/root/home" "$tmp/root/var"
	chmod 1777 "$tmp/root/tmp"
	cp "$tmp/pkg/bin/busybox" "$tmp/root/bin/busybox"
	local applet
	for applet in $("$tmp/root/bin/busybox" --list); do
		[ "$applet" = busybox ] || ln -s busybox "$tmp/root/bin/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$tmp/root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$tmp/root/etc/group"
	say "importing busybox-static as $BUSYBOX_IMAGE"
	tar --numeric-owner -C "$tmp/root" -cf - . |
		docker import --change 'CMD ["sh"]' --change 'ENV PATH=/bin' - "$BUSYBOX_IMAGE" >/dev/null
	rm -rf "$tmp"
}

# --- 4. compose --------------------------------------------------------------

install_compose() {
	local bin=$CACHE_DIR/docker-compose-$COMPOSE_VERSION-$(go env GOOS)-$(go env GOARCH)
	if [ ! -x "$bin" ]; then
		mkdir -p "$CACHE_DIR"
		local mod=github.com/docker/compose/v2 tmp dir version
		tmp=$(mktemp -d)
		say "downloading $mod@$COMPOSE_VERSION from the Go module proxy"
		# Outside any module and workspace, so the download is the module alone.
		if ! (cd "$tmp" && GOWORK=off GOFLAGS= go mod download -json "$mod@$COMPOSE_VERSION" >"$tmp/mod.json"); then
			say "$mod@$COMPOSE_VERSION is not served; taking the latest v2"
			(cd "$tmp" && GOWORK=off GOFLAGS= go mod download -json "$mod@latest" >"$tmp/mod.json") ||
				die "cannot download $mod from the Go module proxy"
		fi
		dir=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' "$tmp/mod.json")
		version=$(sed -n 's/^\t"Version": "\(.*\)",$/\1/p' "$tmp/mod.json")
		[ -d "$dir" ] || die "go mod download gave no module folder (see $tmp/mod.json)"
		say "building docker-compose $version (a few minutes on 2 cores)"
		# The same flags compose's own Makefile uses, with the version stamped in.
		(cd "$dir" && GOWORK=off GOFLAGS= CGO_ENABLED=0 go build -trimpath \
			-ldflags "-s -w -X $mod/internal.Version=$version" -o "$bin.tmp" ./cmd) >"$CACHE_DIR/compose-build.log" 2>&1 ||
			{
				tail -n 30 "$CACHE_DIR/compose-build.log" >&2
				die "building docker-compose failed (log: $CACHE_DIR/compose-build.log)"
			}
		mv "$bin.tmp" "$bin"
		rm -rf "$tmp"
	else
		say "cached $bin"
	fi
	local dest
	for dest in "$HOME/.docker/cli-plugins" /usr/local/lib/docker/cli-plugins; do
		if [ "$dest" = /usr/local/lib/docker/cli-plugins ] && [ "$(id -u)" != 0 ]; then
			continue
		fi
		if ! cmp -s "$bin" "$dest/docker-compose"; then
			mkdir -p "$dest"
			install -m 0755 "$bin" "$dest/docker-compose"
			say "installed $dest/docker-compose"
		fi
	done
	docker compose version >/dev/null || die "docker compose does not run after installing the plugin"
	say "$(docker compose version)"
}

main() {
	local start=$EPOCHREALTIME
	step packages install_packages
	step dockerd start_dockerd
	step "$DEBIAN_IMAGE" build_debian_image
	step golang build_golang_image
	step "$BUSYBOX_IMAGE" build_busybox_image
	step compose install_compose
	say "timings:"
	printf '  %s\n' "${TIMINGS[@]}"
	say "$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "total %.1fs", b - a }')"
	say "images: $DEBIAN_IMAGE $GO_IMAGE $BUSYBOX_IMAGE"
}

main "$@"
