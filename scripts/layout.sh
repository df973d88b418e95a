#!/usr/bin/env bash
# layout.sh: docs/layout.md's import diagram, generated from `go list` (Linux's build): one box per module of the
# shipped code (pkg, the two servers, the agent), one node per package, an arrow per import between them. Left out:
# internal packages and packages for tests (those that import "testing": mcptest, sandboxtest, ciskip, ...).
# TestLayoutDiagram (layout_test.go) fails when docs/layout.md holds another diagram; to update it:
#   scripts/layout.sh > /tmp/diagram && (edit docs/layout.md's mermaid block to be /tmp/diagram)
# or `go test . -run TestLayoutDiagram -update`.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=github.com/goalbox/goalbox/
GOOS=linux go list -f '{{.Module.Path}} {{.ImportPath}} {{.Name}} {{join .Imports " "}}' \
  ./pkg/... ./servers/filesystem/... ./servers/executor/... ./agent/... | awk -v repo="$repo" '
  function short(p) { sub("^" repo, "", p); return p }
  function id(p) { p = short(p); gsub(/[\/.-]/, "_", p); return p }
  {
    for (i = 4; i <= NF; i++) if ($i == "testing") next
    if ($2 ~ /\/internal\//) next
    mod[$2] = short($1); name[$2] = $3; line[$2] = $0; order[++n] = $2
  }
  END {
    print "```mermaid"
    print "flowchart TB"
    # Boxes: each module with its packages, in go list order (sorted by path).
    for (i = 1; i <= n; i++) { m = mod[order[i]]; if (!(m in seen)) { seen[m] = 1; mods[++nm] = m } }
    for (j = 1; j <= nm; j++) {
      printf "  subgraph %s[\"%s\"]\n", "mod_" id(repo mods[j]), mods[j]
      for (i = 1; i <= n; i++) {
        p = order[i]; if (mod[p] != mods[j]) continue
        label = short(p); if (name[p] == "main") label = label " (command)"
        printf "    %s[\"%s\"]\n", id(p), label
      }
      print "  end"
    }
    # Arrows: every import of one of these packages by another.
    for (i = 1; i <= n; i++) {
      p = order[i]; split(line[p], f, " "); to = ""
      for (k = 4; k in f; k++) if (f[k] in mod) to = to (to ? " & " : "") id(f[k])
      if (to) printf "  %s --> %s\n", id(p), to
    }
    print "```"
  }'
