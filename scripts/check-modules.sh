#!/usr/bin/env bash
# check-modules.sh [DIR]: every dependency that two or more modules of the workspace require is required at one
# version, so a module built alone (a Docker image builds one) links what the workspace's tests ran. It reads the
# modules from DIR/go.work (default: the repository) and each module's go.mod, direct and indirect requirements
# alike, and fails naming each dependency that drifts and which module requires which version. To fix a drift,
# raise the lower ones to the highest (`go get DEP@VERSION` in those modules, then `go mod tidy`).
set -euo pipefail
dir=${1:-$(cd "$(dirname "$0")/.." && pwd)}

# The `use` entries of go.work, in either form (`use ./x` or a `use (...)` block).
mapfile -t modules < <(awk '
	/^use[ \t]*\(/ { block = 1; next }
	block && /^\)/ { block = 0; next }
	block && NF { print $1; next }
	/^use[ \t]+[^(]/ { print $2 }
' "$dir/go.work")
if [ ${#modules[@]} -eq 0 ]; then
	echo "check-modules: $dir/go.work lists no modules" >&2
	exit 1
fi

gomods=()
for m in "${modules[@]}"; do
	m=${m#./}
	if [ ! -f "$dir/$m/go.mod" ]; then
		echo "check-modules: go.work uses $m, which has no go.mod" >&2
		exit 1
	fi
	gomods+=("$dir/$m/go.mod")
done

# One line per requirement, "dependency version module", sorted; then each dependency with more than one version.
if ! drift=$(awk -v dir="$dir/" '
	FNR == 1 { mod = substr(FILENAME, length(dir) + 1); sub("/go.mod$", "", mod); block = 0 }
	/^require[ \t]*\(/ { block = 1; next }
	block && /^\)/ { block = 0; next }
	block && NF >= 2 && $1 !~ /^\/\// { print $1, $2, mod; next }
	/^require[ \t]+[^(]/ { print $2, $3, mod }
' "${gomods[@]}" | sort -k1,1 -k2,2V | awk '
	!(($1, $2) in seen) { seen[$1, $2] = 1; count[$1]++; list[$1] = list[$1] (list[$1] ? "; " : "") $2 " in" }
	{ list[$1] = list[$1] " " $3 }
	END {
		bad = 0
		for (d in count) if (count[d] > 1) { print "  " d ": " list[d]; bad = 1 }
		exit bad
	}
' | sort); then
	echo "check-modules: these dependencies are required at more than one version across the workspace's modules;" >&2
	echo "raise each to its highest version in every module that requires it (go get DEP@VERSION, go mod tidy):" >&2
	echo "$drift" >&2
	exit 1
fi
echo "check-modules: ${#modules[@]} modules, every shared dependency at one version"
