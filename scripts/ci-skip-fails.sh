#!/usr/bin/env bash
# ci-skip-fails.sh: a security test made unable to run fails a CI run. Each case runs a real security test's binary
# with what it needs taken away, twice: without CI it must skip (the control: the test really cannot run there),
# with CI=true it must fail, saying why (pkg/ciskip). scripts/test.sh runs this; it needs no root, and as root
# adds the case of a test that needs root.
#   1. git-hook protection (servers/filesystem TestProtectedFiles) with no git on PATH;
#   2. the workspace's ownership (pkg/pathguard TestOwnershipAsRoot) run as nobody, when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
chmod 755 "$bin"

# check NAME ENV... -- COMMAND...: skips without CI, fails with CI=true naming CI.
check() {
  local name=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local out
  if ! out=$(env -u CI "${envs[@]}" "$@" -test.v 2>&1) || ! grep -q -- '--- SKIP' <<<"$out"; then
    echo "ci-skip-fails: $name: without CI the test did not skip:"; echo "$out"; exit 1
  fi
  if out=$(env CI=true "${envs[@]}" "$@" -test.v 2>&1); then
    echo "ci-skip-fails: $name: with CI=true the run passed though the test could not run:"; echo "$out"; exit 1
  fi
  if ! grep -q 'CI=true and this test cannot run here' <<<"$out"; then
    echo "ci-skip-fails: $name: with CI=true the run failed, but not for the test that cannot run:"; echo "$out"; exit 1
  fi
  echo "ci-skip-fails: $name: skips without CI, fails with CI=true"
}

go test -c -o "$bin/fsserver.test" ./servers/filesystem/fsserver
# PATH holds nothing but an empty folder: the test finds no git, as on a machine without it (the in-process HTTP
# runs: the stdio ones build the server with go from PATH).
mkdir "$bin/empty"
(cd servers/filesystem/fsserver && check "git-hook protection without git" PATH="$bin/empty" -- "$bin/fsserver.test" -test.run '^TestProtectedFiles$/^http/')

if [ "$(id -u)" = 0 ]; then
  go test -c -o "$bin/pathguard.test" ./pkg/pathguard
  (cd "$bin" && check "ownership as an ordinary user" -- setpriv --reuid=65534 --regid=65534 --clear-groups "$bin/pathguard.test" -test.run '^TestOwnershipAsRoot$')
fi
