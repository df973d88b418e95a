//go:build linux

package docker

import (
	"os"
	"strings"
	"testing"
)

// TestDockerShm: a command's /dev/shm is a folder of its layer's tmpfs (a root server on the Docker host). It ends
// with the command: 2,000 files made there (seen by the command itself, the control that they were made) are gone
// for the next command, and no layer is left mounted in the state folder. It counts in the caps: under a 32 MiB
// byte cap 48 MB there fails with ENOSPC, and under a 3,000-inode cap 4,500 files there stop below it. Positive
// control: without the layer, the Engine's own /dev/shm (64 MiB, not counted) takes the 48 MB and the 4,500 files
// past the same caps.
func TestDockerShm(t *testing.T) {
	requireRoot(t)
	const (
		fill    = `head -c 48000000 /dev/zero > /dev/shm/big; echo "exit $?"`
		files   = `cd /dev/shm && seq 4500 | xargs touch 2>/dev/null; ls | wc -l`
		ends    = `cd /dev/shm && seq 2000 | xargs touch && ls | wc -l`
		counted = 3_000
	)
	for _, off := range []bool{false, true} {
		t.Run(map[bool]string{false: "layer", true: "no_layer_control"}[off], func(t *testing.T) {
			b, _ := newDockerTestBackend(t, func(c *Config) {
				c.NoWorkspaceLayer, c.MaxWorkspaceBytes, c.MaxWorkspaceInodes, c.CacheHostDir = off, 32<<20, counted, t.TempDir()
			})
			if b.layered == off {
				t.Fatalf("layered %v: %s", b.layered, b.layerNote)
			}
			if _, out := layerRun(t, b, ends); strings.TrimSpace(out) != "2000" {
				t.Fatalf("the command did not make its 2,000 files in /dev/shm: %q", out)
			}
			if _, out := layerRun(t, b, "ls /dev/shm | wc -l"); strings.TrimSpace(out) != "0" {
				t.Errorf("the next command finds %s files in /dev/shm", strings.TrimSpace(out))
			}
			left, _ := os.ReadDir(b.ctlRoot)
			for _, e := range left {
				if strings.HasPrefix(e.Name(), "l-") {
					t.Errorf("a layer is left in the state folder after its command: %s", e.Name())
				}
			}
			_, out := layerRun(t, b, fill)
			if refused := !strings.Contains(out, "exit 0"); refused == off {
				t.Errorf("layer %v: 48 MB into /dev/shm under a 32 MiB cap: %q", !off, out)
			}
			_, out = layerRun(t, b, files)
			made := strings.TrimSpace(out[strings.LastIndexByte(strings.TrimSpace(out), '\n')+1:])
			if under := made != "4500"; under == off {
				t.Errorf("layer %v: %s of 4,500 files made in /dev/shm under a %d-inode cap", !off, made, counted)
			}
		})
	}
}
