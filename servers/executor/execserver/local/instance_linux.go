package local

// A backend instance leaves two things on the host while it runs: its private temp folder and its parent cgroups.
// Close removes both; a server killed with SIGKILL cannot, so their names carry the server's pid and the next
// backend to start removes those whose server is gone (the cgroups through package cgroup, given instanceDead).

import (
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
)

// instanceLabel names a backend instance: the server's pid and a random part, e.g. "12345-0a1b2c3d4e5f".
func instanceLabel(id [6]byte) string {
	return strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(id[:])
}

// instanceLabelPattern is what instanceLabel makes; anything else (an older version's name, a test's probe) is
// never taken for a dead instance.
var instanceLabelPattern = regexp.MustCompile(`^([0-9]+)-[0-9a-f]{12}$`)

// instanceDead reports whether the server that made instance label is gone: its pid does not exist. A label this
// version did not make is never dead. (A server in another PID namespace that shares this cgroup tree or cache
// folder would be taken for dead: give such servers cache folders of their own.)
func instanceDead(label string) bool {
	m := instanceLabelPattern.FindStringSubmatch(label)
	if m == nil {
		return false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// removeStaleInstances removes the temp folders under dir whose server is gone.
func removeStaleInstances(dir string, logger *slog.Logger) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() && instanceDead(e.Name()) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err == nil {
				logger.Info("removed the temp folder of a dead executor", "folder", e.Name())
			}
		}
	}
}
