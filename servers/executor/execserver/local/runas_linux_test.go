package local

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
)

// TestRootRefusesToHandOverASharedFolder: a root server whose workspace root owns gives it to the run-as user, but
// not a folder every user may write in (a /tmp of its own here) nor the system's top-level folders: there it would
// give away what belongs to everyone else (sudo executor -workspace /tmp once handed every program's temporary
// files to uid 65532). Control: the same folder, private, is handed over.
func TestRootRefusesToHandOverASharedFolder(t *testing.T) {
	if os.Geteuid() != 0 {
		ciskip.Skip(t, "needs a root server: only root hands a workspace over")
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(ws), 0o711); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(ws, "another-programs-temp")
	if err := os.WriteFile(other, []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	owner := func() uint32 {
		fi, err := os.Lstat(other)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Uid
	}
	cfg := Config{Workspace: ws, CacheDir: filepath.Join(filepath.Dir(ws), "cache")}
	if err := os.Chmod(ws, 0o1777); err != nil {
		t.Fatal(err)
	}
	if b, err := New(cfg, nil); err == nil {
		b.Close()
		t.Fatal("a root server took a sticky, world-writable workspace and handed it over")
	} else if !strings.Contains(err.Error(), "every user may write in") || !strings.Contains(err.Error(), "use a folder of the workspace's own") {
		t.Errorf("the refusal does not say why or what to do: %v", err)
	}
	if owner() != 0 {
		t.Fatalf("the refused hand-over changed a file's owner to %d", owner())
	}
	for _, system := range []string{"/", "/usr", "/tmp"} {
		if err := refuseHandOver(system); err == nil || !strings.Contains(err.Error(), "top-level") {
			t.Errorf("%s: %v", system, err)
		}
	}

	// Control: private, the same folder is handed over, the file with it.
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("a private root-owned workspace: %v", err)
	}
	defer b.Close()
	if owner() != DefaultRunAsUID {
		t.Errorf("the private workspace's file is owned by %d, want the run-as user %d", owner(), DefaultRunAsUID)
	}
}
