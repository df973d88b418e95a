package docker

// Totals by construction: every container of a backend (commands, processes, the warm pool, the network holder)
// is started under one cgroup of its own (HostConfig.CgroupParent), whose memory and pids limits are the total caps.
// The slots of state.go still admit a container only while the containers' limits fit in the totals (so a command
// is refused with a message rather than failing its forks); the cgroup is what the kernel enforces over all of them
// together, whatever the bookkeeping believes, holder included.
//
// It takes a root server on the Docker host whose Engine uses the cgroupfs driver (the parent is then a path in each
// hierarchy, which the server makes and limits before the Engine puts containers under it), on cgroup v1 or v2.
// Under the systemd driver the parent would have to be a systemd slice; with Docker Desktop, a remote Engine or a
// server that is not root, the host's cgroups are out of reach: there the slots are all there is, and the start-up
// log says so.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/moby/moby/client"
)

// cgroupRoot is where the host's cgroup hierarchies are mounted.
var cgroupRoot = "/sys/fs/cgroup"

// setupTotalsCgroup makes and limits the backend's parent cgroup, when the server can; "" otherwise, with the reason.
func (b *dockerBackend) setupTotalsCgroup(ctx context.Context) (parent string, why error) {
	if os.Geteuid() != 0 {
		return "", errors.New("the server is not root: it cannot make the host's cgroups")
	}
	if b.cfg.TotalMemory <= 0 && b.cfg.TotalPIDs <= 0 {
		return "", errors.New("no total caps")
	}
	info, err := b.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return "", err
	}
	if info.Info.CgroupDriver != "cgroupfs" {
		return "", fmt.Errorf("the Engine's cgroup driver is %q, not cgroupfs", info.Info.CgroupDriver)
	}
	name := "goalbox-exec-" + b.cfg.Instance
	write := func(dir, file string, v int64) error {
		if v <= 0 {
			return nil
		}
		return os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(v, 10)), 0o644)
	}
	var dirs []string
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil { // v2
		dir := filepath.Join(cgroupRoot, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			return "", err
		}
		dirs = append(dirs, dir)
		// The Engine's containers under it need the controllers handed down.
		_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +pids +cpu +io +cpuset"), 0o644)
		if err := errors.Join(write(dir, "memory.max", b.cfg.TotalMemory), write(dir, "memory.swap.max", 0),
			write(dir, "pids.max", b.cfg.TotalPIDs)); err != nil {
			return "", err
		}
	} else { // v1: a hierarchy per controller
		mem, pids := filepath.Join(cgroupRoot, "memory", name), filepath.Join(cgroupRoot, "pids", name)
		for _, d := range []string{mem, pids} {
			if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
				return "", err
			}
			dirs = append(dirs, d)
		}
		if err := errors.Join(write(mem, "memory.limit_in_bytes", b.cfg.TotalMemory), write(pids, "pids.max", b.cfg.TotalPIDs)); err != nil {
			return "", err
		}
		// Swap counted too where the kernel accounts it (memsw must not be below the plain limit: set after it).
		_ = write(mem, "memory.memsw.limit_in_bytes", b.cfg.TotalMemory)
	}
	b.cgroupDirs = dirs
	return "/" + name, nil
}

// removeTotalsCgroup removes the parent cgroup once its containers are gone, in every v1 hierarchy the Engine made
// it in as well (a busy one stays, limits and all, for the next start of the instance to take over).
func (b *dockerBackend) removeTotalsCgroup() {
	if b.cgroupParent == "" {
		return
	}
	others, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", b.cgroupParent))
	for _, d := range append(b.cgroupDirs, others...) {
		_ = os.Remove(d) // rmdir: only an empty cgroup goes
	}
}
