//go:build linux

package local

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// newLocalTestBackend builds a local backend over a fresh workspace, with its caches in a test folder. mutate may
// change the configuration first.
func newLocalTestBackend(t testing.TB, mutate func(*Config)) (backend.Backend, string) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// t.TempDir's folders are 0700; commands run as an unprivileged user, and in the fallback mode (no mount
	// namespace to bridge closed folders) that user must be able to pass through the test's folder.
	if err := os.Chmod(filepath.Dir(ws), 0o711); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Workspace: ws, CacheDir: filepath.Join(filepath.Dir(ws), "cache")}
	if mutate != nil {
		mutate(&cfg)
	}
	b, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if !cfg.NoNamespaces && sandboxtest.UserNamespacesWork() {
		// Where user namespaces work, the namespace mode must be what a backend gets, not a quiet fallback.
		if mode := b.Confinement().Mode; mode != protocol.IsolationPIDNamespace {
			t.Fatalf("the backend fell back to %v where user namespaces work", mode)
		}
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, ws
}
