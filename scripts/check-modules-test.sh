#!/usr/bin/env bash
# Tests scripts/check-modules.sh on copies of the workspace's go.work and go.mod files: the copy as it is passes,
# and a copy where one module requires another version of a shared dependency fails, naming the dependency, both
# versions and the modules that require them.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
check=$repo/scripts/check-modules.sh
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT

cp "$repo/go.work" "$copy/"
(cd "$repo" && find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*') | while read -r f; do
	mkdir -p "$copy/$(dirname "$f")"
	cp "$repo/$f" "$copy/$f"
done
if ! "$check" "$copy" >/dev/null; then
	echo "check-modules-test: the check fails on an unchanged copy of the workspace" >&2
	exit 1
fi

# Drift: pkg requires an older golang.org/x/sys than the others (pkg and the executor both require it).
want=$(awk '$1 == "golang.org/x/sys" { print $2 }' "$repo/pkg/go.mod")
sed -i 's|^\(\s*golang.org/x/sys\) v[^ ]*|\1 v0.1.0|' "$copy/pkg/go.mod"
if out=$("$check" "$copy" 2>&1); then
	echo "check-modules-test: the check passed a workspace whose modules require two versions of golang.org/x/sys:" >&2
	echo "$out" >&2
	exit 1
fi
for s in "golang.org/x/sys: v0.1.0 in pkg;" "$want in" "servers/executor"; do
	if [[ $out != *"$s"* ]]; then
		echo "check-modules-test: the check's message does not say \"$s\":" >&2
		echo "$out" >&2
		exit 1
	fi
done
echo "check-modules-test: passes the workspace, fails a drifted copy naming the dependency and its versions"
