#!/usr/bin/env bash
# Lines of non-test Go at a revision (default: the working tree's HEAD), split into the code that ships (the
# servers, the agent, pkg) and the helpers tests import (packages named *test, tests/), by top-level area:
#   scripts/lines.sh [REV]
# or, with a folder, that folder's non-test lines at REV, everything under it counted (a package and its
# subpackages), and its share in each of its packages:
#   scripts/lines.sh REV servers/executor/execserver/local
# docs/layout.md keeps the figures before and after the layering work and how to read them.
set -euo pipefail
rev=${1:-HEAD}
folder=${2:-}
cd "$(dirname "$0")/.."
if [ -n "$folder" ]; then
  git ls-tree -r --name-only "$rev" -- "${folder%/}/" | grep '\.go$' | grep -v -e '_test\.go$' -e '/testdata/' | while read -r f; do
    echo "$(dirname "$f") $(git show "$rev:$f" | wc -l)"
  done | awk -v folder="${folder%/}" '{by[$1]+=$2; total+=$2} END {
    for (k in by) print k, by[k] | "sort"; close("sort")
    printf "%s (folder) %d\n", folder, total }'
  exit 0
fi
git ls-tree -r --name-only "$rev" | grep '\.go$' | grep -v -e '_test\.go$' -e '/testdata/' | while read -r f; do
  case "$f" in
    tests/*|*test/*) kind=test-support ;;
    *) kind=shipped ;;
  esac
  area=$(echo "$f" | cut -d/ -f1-2)
  case "$area" in *.go) area=$(dirname "$f") ;; esac
  echo "$kind $area $(git show "$rev:$f" | wc -l)"
done | awk '{by[$1" "$2]+=$3; kind[$1]+=$3} END {
  for (k in by) print k, by[k] | "sort"; close("sort")
  printf "shipped %d  test-support %d  total %d\n", kind["shipped"], kind["test-support"], kind["shipped"]+kind["test-support"] }'
