//go:build linux

package local

import (
	"fmt"
	"testing"

	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// TestProcesses runs the process tools' contract on the local backend in both modes. Without namespaces there is
// no private loopback to share (seccomp refuses Internet sockets), so the server test skips there.
func TestProcesses(t *testing.T) {
	for _, noNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-namespaces=%v", noNS), func(t *testing.T) {
			modeWanted(t, noNS)
			b, ws := newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = noNS })
			const maxProcesses = 3
			srv := sandboxtest.StartServer(t, b, ws, execserver.Config{MaxProcesses: maxProcesses}, nil)
			target := sandboxtest.ProcessTarget{MaxProcesses: maxProcesses}
			if !noNS {
				target.Serve = func(port int) string {
					return fmt.Sprintf(`echo serving >&2; exec python3 -m http.server %d --bind 127.0.0.1`, port)
				}
				target.Fetch = func(port int, path string) string {
					return fmt.Sprintf(`for i in 1 2 3 4 5 6 7 8 9 10; do curl -sf http://127.0.0.1:%d%s && exit 0; sleep 0.5; done; exit 1`, port, path)
				}
			}
			sandboxtest.RunProcesses(t, srv, ws, target)
		})
	}
}
