package execserver

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/wsguard"
)

// runner runs requests on the backend between a scan and a sweep of the protected paths: the one way both the
// commands (server.go) and the processes (runProcess, process_tools.go) reach the backend.
type runner struct {
	backend   backend.Backend
	protect   *protector // nil when no path is protected
	workspace string     // the workspace's real host path, the one host path a client may see in an error
	// layers applies each command's layer when the backend gives it one (backend.Layered): then no scan, no
	// read-only mount and no sweep is needed, since commands never write the workspace.
	layers *wsguard.Guard
}

// run runs r and returns what the sweep undid.
func (rn runner) run(ctx context.Context, r backend.Request) (backend.Result, swept, error) {
	if rn.layers != nil {
		r.Apply = rn.layers.Session().Apply
		res, err := rn.backend.Run(ctx, r)
		return res, swept{}, err
	}
	if rn.protect == nil {
		res, err := rn.backend.Run(ctx, r)
		return res, swept{}, err
	}
	before := rn.protect.scan()
	r.Protected = before.outermost
	res, err := rn.backend.Run(ctx, r)
	undone := rn.protect.sweep(before)
	return res, undone, err
}

// failure says, for a client, that the backend could not run the command: err without the host paths outside the
// workspace.
func (rn runner) failure(err error) string {
	return fmt.Sprintf("could not be run by the %s backend: %s", rn.backend.Name(), hideHostPaths(err.Error(), rn.workspace))
}

// absPath finds absolute paths in a message.
var absPath = regexp.MustCompile(`/[^\s:'"()\[\]{},;]+`)

// hideHostPaths replaces the host paths in a backend's error that are not in the workspace, which a client may not
// learn, by "<host path>".
func hideHostPaths(msg, workspace string) string {
	return absPath.ReplaceAllStringFunc(msg, func(p string) string {
		if within(p, workspace) {
			return p
		}
		return "<host path>"
	})
}

// within reports whether p is dir or inside it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
