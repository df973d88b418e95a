package mcpserve

import (
	"runtime/debug"
	"sync"
)

// Version is the running binary's version, from its build info: the module version it was built at (go install
// …@v1.2.3), else the commit go build stamped in a git checkout (with "+dirty" for uncommitted changes), else
// "devel" (go test and go run stamp neither). Both servers report it on initialize, on the health endpoint and for
// -version.
var Version = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return rev[:min(12, len(rev))] + dirty
})
