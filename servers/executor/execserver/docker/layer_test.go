//go:build linux

package docker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
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

// The attacks on the caps and on the protected paths, each printing name=landed when the command saw it work. The
// test then checks what reached the host.
const (
	layerCap       = 64 << 20
	layerInodes    = 3000
	fillQuickly    = `for i in 1 2 3 4 5 6 7 8 9 10; do fallocate -l 20M f$i 2>/dev/null; done; fallocate -l 200M /cache/big 2>/dev/null; echo filled`
	fillInodes     = `i=0; while [ $i -lt 5000 ]; do : > n$i 2>/dev/null || break; i=$((i+1)); done; echo made=$i`
	swapGit        = `cp -r .git .git2 && printf '[core]\n\tfsmonitor = "touch /tmp/planted"\n' >> .git2/config && mv .git .git-old && mv .git2 .git && echo swapped`
	plantedMonitor = "fsmonitor"
)

// TestDockerLayerGuard: on a root server on the Docker host each container works on a layer of the workspace and
// the cache in a tmpfs sized by what the caps leave, applied through the workspace guard. Quick fallocates past the
// byte cap fail at the write and nothing of them is kept; files past the inode cap are refused at the create; a
// command started at the cap can write almost nothing and is told so; a swapped .git with a planted
// core.fsmonitor does not land and the result names it; ordinary changes land, owned by the workspace's owner.
// Positive control: the same commands on a backend without layers and without caps fill the disk, make the files
// and plant the monitor.
func TestDockerLayerGuard(t *testing.T) {
	requireRoot(t)
	cache := t.TempDir()
	b, ws := newDockerTestBackend(t, func(c *Config) {
		c.MaxWorkspaceBytes, c.MaxWorkspaceInodes, c.CacheHostDir = layerCap, layerInodes, cache
	})
	if !b.layered {
		t.Fatalf("a root server on the Docker host should give its containers layers: %s", b.layerNote)
	}
	protectedRepo(t, ws)
	config, _ := os.ReadFile(filepath.Join(ws, ".git/config"))
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

	_, out := layerRun(t, b, fillInodes)
	made, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(out, "made=")))
	if made >= layerInodes {
		t.Errorf("%d files made past the inode cap of %d: %q", made, layerInodes, out)
	}
	if _, inodes := diskcap.UsageInodes(dirs...); inodes > layerInodes {
		t.Errorf("the workspace and the cache hold %d inodes past the cap of %d", inodes, layerInodes)
	}
	layerRun(t, b, "rm -f n*")

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

	res, out := layerRun(t, b, swapGit)
	if !strings.Contains(out, "swapped") {
		t.Fatalf("the swap itself failed in the layer: %q", out)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, ".git/config")); string(got) != string(config) {
		t.Errorf("the swapped .git planted its config: %q", got)
	}
	if len(res.WorkspaceRefused) == 0 {
		t.Errorf("the result names no refused change")
	}

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
	ctl, cws := newDockerTestBackend(t, func(c *Config) {
		c.MaxWorkspaceBytes, c.MaxWorkspaceInodes, c.CacheHostDir, c.NoWorkspaceLayer = -1, -1, t.TempDir(), true
	})
	protectedRepo(t, cws)
	layerRun(t, ctl, fillQuickly)
	if used := diskcap.Usage(ctl.diskDirs()...); used < 200<<20 {
		t.Errorf("positive control: the fallocates kept only %d bytes", used)
	}
	if _, out := layerRun(t, ctl, fillInodes); !strings.Contains(out, "made=5000") {
		t.Errorf("positive control: %q", out)
	}
	layerRun(t, ctl, swapGit)
	if got, _ := os.ReadFile(filepath.Join(cws, ".git/config")); !strings.Contains(string(got), plantedMonitor) {
		t.Errorf("positive control: the swap did not plant: %q", got)
	}
}
