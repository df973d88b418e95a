#!/usr/bin/env bash
# setup-toolchains.sh installs what the benchmark grader (agent/bench) needs to grade the six Polyglot tracks on
# Debian 12 with only Go, Node 20 and python3 preinstalled, and no registry but Debian's apt and npm:
#
#   python      python3-pytest (Debian's; there is no PyPI here)
#   go          the machine's Go
#   rust        cargo (Debian's when none is on PATH) and the librust-*-dev crates the exercises' manifests name,
#               which Debian installs as a directory registry in /usr/share/cargo/registry: cargo runs offline
#   javascript  jest 29.7.0, babel-jest and the Exercism babel preset, installed once from npm into
#               $CACHE/js/node_modules; each exercise links to it instead of running npm install
#   cpp         cmake, make, g++, Boost date_time (gigasecond and meetup), and ccache (the selftest shares one
#               compiled Catch main between exercises)
#   java        a JDK, JUnit 5 (its console launcher) and AssertJ from Debian: Gradle cannot run offline
#
# Idempotent: a second run checks and installs nothing. Needs root for apt-get. CI and a person run the same script.
#
# Environment (optional):
#   GOALBOX_CACHE_DIR  cache folder (default /var/cache/goalbox as root, else ~/.cache/goalbox); the grader reads
#                      the same variable
set -euo pipefail

. "$(cd "$(dirname "$0")" && pwd)/lib.sh" # CACHE_DIR
say() { printf 'setup-toolchains: %s\n' "$*"; }
die() {
	printf 'setup-toolchains: error: %s\n' "$*" >&2
	exit 1
}

# Debian packages. The librust-*-dev crates are those the Rust exercises' Cargo.toml files ask for that Debian
# has in a matching version (time 0.3, rand 0.8, anyhow 1, thiserror 1); see docs/benchmark.md for the rest.
packages=(
	python3-pytest
	python3-pandas python3-numpy python3-matplotlib # the agent's data-analysis test (agent/vision_test.go)
	cmake make g++ ccache libboost-date-time-dev
	default-jdk-headless junit5 libassertj-core-java
	librust-time-dev librust-rand-dev librust-anyhow-dev librust-thiserror-dev
	bubblewrap # the anchor of the executor's per-command cost (BenchmarkBwrapTrue)
	git        # the protected-files attacks run the host's git after each (sandboxtest.RunProtectedFiles)
	iproute2   # ip(8): the egress tests' upstream network namespaces and veth pairs (egresstest.NewUpstream)
)
if ! command -v cargo >/dev/null 2>&1; then
	packages+=(cargo)
fi
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "apt-get install ${missing[*]} needs root; run this script with sudo"
	say "apt-get install ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y --no-install-recommends "${missing[@]}" >/tmp/setup-toolchains-apt.log 2>&1; then
		apt-get update >/dev/null
		apt-get install -y --no-install-recommends "${missing[@]}" >/tmp/setup-toolchains-apt.log 2>&1 ||
			die "apt-get install failed; see /tmp/setup-toolchains-apt.log"
	fi
else
	say "Debian packages present"
fi

# jest 29.7.0 (Aider's pin: jest 30 fails two correct solutions) with what the exercises' babel.config.js needs.
js_dir=$CACHE_DIR/js
want_jest=29.7.0
have_jest=$(node -p "require('$js_dir/node_modules/jest/package.json').version" 2>/dev/null || true)
if [ "$have_jest" != "$want_jest" ] || [ ! -f "$js_dir/node_modules/@exercism/babel-preset-javascript/package.json" ]; then
	say "npm install jest@$want_jest and the Exercism babel preset into $js_dir"
	mkdir -p "$js_dir"
	cd "$js_dir"
	[ -f package.json ] || echo '{"private": true}' >package.json
	npm install --no-audit --no-fund --save-exact --loglevel=error \
		"jest@$want_jest" "babel-jest@$want_jest" @babel/core@7.25.2 \
		@exercism/babel-preset-javascript@0.2.1 core-js@3.37.1 >/dev/null
	cd - >/dev/null
else
	say "jest $want_jest present in $js_dir"
fi

# Prove each toolchain answers, so a broken install shows here and not as 200 ungradable exercises.
python3_with_pytest=""
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import pytest' >/dev/null 2>&1; then python3_with_pytest=$p; break; fi
done
[ -n "$python3_with_pytest" ] || die "no python3 can import pytest"
go version >/dev/null || die "go is missing"
cargo --version >/dev/null || die "cargo is missing"
[ -d /usr/share/cargo/registry ] || die "no /usr/share/cargo/registry"
cmake --version >/dev/null && g++ --version >/dev/null && ccache --version >/dev/null || die "C++ tools are missing"
javac -version >/dev/null 2>&1 && [ -r /usr/share/java/junit-platform-console-standalone.jar ] || die "JDK or JUnit 5 is missing"
node "$js_dir/node_modules/jest/bin/jest.js" --version >/dev/null || die "jest does not run"
say "ready: pytest ($python3_with_pytest), go, cargo, jest $want_jest, cmake+g++, javac+JUnit 5"
