//go:build linux

package backends

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
)

// TestRequireNamespaces: with RequireNamespaces the local backend's fallback (the real one, -no-namespaces) is
// refused with a message that says what to do, and closed; without it the fallback starts (positive control), and
// the client is told in the server's instructions and in sandbox_run_command's description, not only on the
// server's stderr.
func TestRequireNamespaces(t *testing.T) {
	ws, cache := t.TempDir(), t.TempDir()
	// A root test's commands run as another user, who must pass through the test's folders.
	for _, d := range []string{filepath.Dir(ws), filepath.Dir(cache)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Backend: Local, Local: local.Config{NoNamespaces: true, CacheDir: cache}}
	cfg.RequireNamespaces = true
	if b, _, err := Open(context.Background(), ws, cfg, local.New); err == nil {
		b.Close()
		t.Fatal("-require-namespaces started the fallback")
	} else if !strings.Contains(err.Error(), "-require-namespaces refuses") || !strings.Contains(err.Error(), "-backend docker") {
		t.Errorf("the refusal does not say why and what to do: %v", err)
	}

	cfg.RequireNamespaces = false
	b, _, err := Open(context.Background(), ws, cfg, local.New)
	if err != nil {
		t.Fatalf("positive control: the fallback without -require-namespaces: %v", err)
	}
	defer b.Close()
	if !b.Confinement().WithoutNamespaces() {
		t.Fatalf("-no-namespaces should be the fallback: %+v", b.Confinement())
	}
	srv := sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil)
	if ins := srv.Session.InitializeResult().Instructions; !strings.Contains(ins, "WEAKER SANDBOX") || !strings.Contains(ins, "-require-namespaces") {
		t.Errorf("the instructions do not tell the client of the fallback: %q", ins)
	}
	tools, err := srv.Session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "sandbox_run_command" && !strings.Contains(tool.Description, "WEAKER SANDBOX") {
			t.Errorf("sandbox_run_command's description does not tell of the fallback: %q", tool.Description)
		}
	}
}
