//go:build linux

package local

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/diskcap"

	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// TestLocalProtectedFiles attacks the protected project files in the namespace mode, where the holder makes them
// read-only, and in the fallback, where only the sweep after each command undoes what a command did; and, as the
// positive control, with nothing protected, where every attack must succeed.
func TestLocalProtectedFiles(t *testing.T) {
	for _, m := range []struct {
		name                  string
		fallback, unprotected bool
	}{{"namespaces", false, false}, {"fallback", true, false}, {"unprotected", false, true}} {
		t.Run(m.name, func(t *testing.T) {
			modeWanted(t, m.fallback)
			sandboxtest.RunProtectedFiles(t, func(t *testing.T) (backend.Backend, string) {
				return newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = m.fallback })
			}, !m.fallback, m.unprotected)
		})
	}
}

// TestQuarantineIsBounded: the quarantine lies outside the workspace, where no disk cap counts, so what a command
// plants there is kept only up to its bound. Positive control: a small planted file is kept whole.
func TestQuarantineIsBounded(t *testing.T) {
	sandboxtest.RequireNamespaceMode(t)
	// The quarantine is the sweep's: without the workspace layer (a kernel without overlayfs in a user namespace).
	b, ws := newLocalTestBackend(t, func(c *Config) { c.NoWorkspaceLayer = true })
	q := t.TempDir()
	srv := sandboxtest.StartServer(t, b, ws, execserver.Config{QuarantineDir: q}, nil)
	small := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "mkdir -p .vscode && echo '{}' > .vscode/tasks.json"})
	if len(small.ProtectedUndone) != 1 || diskcap.Usage(q) == 0 {
		t.Fatalf("positive control: a small planted .vscode is not kept in the quarantine: %+v, %d bytes", small, diskcap.Usage(q))
	}
	big := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "mkdir -p .vscode && for i in $(seq 40); do head -c 8000000 /dev/zero > .vscode/f$i; done", TimeoutSeconds: 120})
	if len(big.ProtectedUndone) != 1 {
		t.Fatalf("the planted .vscode was not undone: %+v", big)
	}
	if _, err := os.Stat(filepath.Join(ws, ".vscode")); err == nil {
		t.Error(".vscode is still in the workspace")
	}
	if used := diskcap.Usage(q); used > 256<<20 {
		t.Errorf("the quarantine holds %d bytes, past its bound", used)
	}
}
