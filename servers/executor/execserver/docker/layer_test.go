//go:build linux

package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/diskcap"
)

// layerRun runs one command and returns its result and its output.
func layerRun(t *testing.T, b *dockerBackend, cmd string) (backend.Result, string) {
	t.Helper()
	var out syncBuffer
	res, err := b.Run(context.Background(), backend.Request{Command: cmd, Dir: ".", Timeout: 2 * time.Minute, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("%q: %v", cmd, err)
	}
	return res, out.String()
}

// The attack on the byte cap: quick fallocates in the workspace and one in the cache.
const (
	layerCap    = 64 << 20
	fillQuickly = `for i in 1 2 3 4 5 6 7 8 9 10; do fallocate -l 20M f$i 2>/dev/null; done; fallocate -l 200M /cache/big 2>/dev/null; echo filled`
)

// TestDockerLayerGuard: on a root server on the Docker host each container works on a layer of the workspace and
// the cache in a tmpfs sized by what the caps leave, applied through the workspace guard. Quick fallocates past the
// byte cap, in the workspace and in /cache, fail at the write and nothing of them is kept; a command started at the
// cap can write almost nothing and is told so; ordinary changes land, owned by the workspace's owner, in the
// workspace and the cache. Positive control: the same fallocates on a backend without layers and without caps fill
// the disk. (The inode cap, the swapped .git and the host's git are the shared suite's: TestDockerWorkspaceGuard.)
func TestDockerLayerGuard(t *testing.T) {
	requireRoot(t)
	cache := t.TempDir()
	b, ws := newDockerTestBackend(t, func(c *Config) {
		c.MaxWorkspaceBytes, c.CacheHostDir = layerCap, cache
	})
	if !b.layered {
		t.Fatalf("a root server on the Docker host should give its containers layers: %s", b.layerNote)
	}
	dirs := b.diskDirs()

	if _, out := layerRun(t, b, fillQuickly); !strings.Contains(out, "filled") {
		t.Fatalf("fill: %q", out)
	}
	if used := diskcap.Usage(dirs...); used > layerCap {
		t.Errorf("quick fallocates kept %d bytes past the %d-byte cap", used, layerCap)
	}
	// fallocate makes the file before it fails: an empty one may land, none of its bytes.
	if fi, err := os.Stat(filepath.Join(b.cacheDir, "big")); err == nil && fi.Size() > 0 {
		t.Errorf("a 200 MiB file in /cache past the cap was kept: %d bytes", fi.Size())
	}

	// At the cap (the filesystem server, or the person, filled it): the command starts with the floor only.
	if err := os.WriteFile(filepath.Join(ws, "host-big"), make([]byte, layerCap), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, out := layerRun(t, b, "fallocate -l 8M more && echo wrote"); strings.Contains(out, "wrote") || !strings.Contains(out, "at the executor's cap") {
		t.Errorf("a command started at the cap: %q", out)
	}
	if fi, err := os.Stat(filepath.Join(ws, "more")); err == nil && fi.Size() > 0 {
		t.Errorf("a file written at the cap was kept: %d bytes", fi.Size())
	}
	os.Remove(filepath.Join(ws, "host-big"))

	if _, out := layerRun(t, b, "echo kept > kept.txt && mkdir -p d && echo c > /cache/c && echo ok"); !strings.Contains(out, "ok") {
		t.Fatalf("ordinary changes: %q", out)
	}
	fi, err := os.Stat(filepath.Join(ws, "kept.txt"))
	if uid, _, _ := fileOwner(fi); err != nil || uid != dockerTestUID {
		t.Errorf("an ordinary file did not land, owned by the workspace's owner: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(b.cacheDir, "c")); string(got) != "c\n" {
		t.Errorf("an ordinary cache file did not land: %q", got)
	}
	dockerCheckSentinel(t, ws)

	// Positive control: no layer, no caps.
	ctl, _ := newDockerTestBackend(t, func(c *Config) {
		c.MaxWorkspaceBytes, c.MaxWorkspaceInodes, c.CacheHostDir, c.NoWorkspaceLayer = -1, -1, t.TempDir(), true
	})
	layerRun(t, ctl, fillQuickly)
	if used := diskcap.Usage(ctl.diskDirs()...); used < 200<<20 {
		t.Errorf("positive control: the fallocates kept only %d bytes", used)
	}
}
