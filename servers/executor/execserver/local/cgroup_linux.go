package local

// Limits per command from cgroup controllers, where the server may create cgroups (root on a host; usually not in
// a container): a process limit (pids) and a memory limit (memory) over all of a command's processes together.
// RLIMIT_NPROC cannot do the first: the kernel does not apply it to root, and it counts every process of the user,
// the server's own included. RLIMIT_DATA, which is set too, binds each process alone.

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultTotalPidsLimit is how many processes and threads all of one executor's commands may have together.
const DefaultTotalPidsLimit = 4096

// defaultTotalMemory is the memory all of one executor's commands may use together: half of the machine's.
func defaultTotalMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10 / 2
			}
		}
	}
	return 0
}

// DefaultPidsLimit is how many processes and threads one command may have at once: plenty for make -j, go test
// and jest workers, far below what a fork bomb wants.
const DefaultPidsLimit = 1024

// cgroupPrefix starts the name of a backend's parent cgroup; the instance label follows.
const cgroupPrefix = "goalbox-exec-"

// cgroupLimit is one controller's limit for each command of a backend.
type cgroupLimit struct {
	dir   string // this backend's parent cgroup
	file  string // the limit file: pids.max, memory.max (v2) or memory.limit_in_bytes (v1)
	limit int64
	total int64 // on the parent: all commands together (0: none)
	seq   atomic.Int64
}

// newCgroupLimit makes a parent cgroup for this backend's commands under the server's own cgroup of controller
// ("pids" or "memory").
//
// total, when positive, is written to the parent itself: a limit for all of the backend's commands together, so
// that N concurrent bombs, each within its own limit, still cannot take the machine.
func newCgroupLimit(controller, instance string, limit, total int64, logger *slog.Logger) (*cgroupLimit, error) {
	base, v2, err := ownCgroupDir(controller)
	if err != nil {
		return nil, err
	}
	file := controller + ".max"
	if controller == "memory" && !v2 {
		file = "memory.limit_in_bytes"
	}
	removeStaleCgroups(base, logger)
	dir := filepath.Join(base, cgroupPrefix+instance)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("the %s controller is not enabled for the server's cgroup", controller)
	}
	if total > 0 {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(total, 10)), 0); err != nil {
			_ = os.Remove(dir)
			return nil, fmt.Errorf("the total %s limit: %w", controller, err)
		}
	}
	c := &cgroupLimit{dir: dir, file: file, limit: limit, total: total}
	return c, nil
}

// ownCgroupDir finds the folder of the server's own cgroup for controller: in cgroup v1's hierarchy of that
// controller, or in cgroup v2's unified hierarchy.
func ownCgroupDir(controller string) (dir string, v2 bool, err error) {
	var v1Mount, v2Mount string
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", false, err
	}
	defer mi.Close()
	sc := bufio.NewScanner(mi)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		i := slices.Index(f, "-")
		if i < 0 || len(f) < i+4 {
			continue
		}
		switch fstype, opts := f[i+1], f[i+3]; {
		case fstype == "cgroup" && hasOpt(opts, controller):
			v1Mount = f[4]
		case fstype == "cgroup2" && v2Mount == "":
			v2Mount = f[4]
		}
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case v1Mount != "" && hasOpt(parts[1], controller):
			return filepath.Join(v1Mount, parts[2]), false, nil
		case v1Mount == "" && v2Mount != "" && parts[0] == "0":
			return filepath.Join(v2Mount, parts[2]), true, nil
		}
	}
	return "", false, fmt.Errorf("no %s cgroup controller", controller)
}

func hasOpt(opts, name string) bool { return slices.Contains(strings.Split(opts, ","), name) }

// prepare makes a fresh per-command cgroup with the limit written.
func (c *cgroupLimit) prepare() (string, error) {
	dir := filepath.Join(c.dir, strconv.FormatInt(c.seq.Add(1), 10))
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, os.ErrNotExist) {
		// Someone removed the backend's parent cgroup (it is empty between commands): make it again.
		if err = os.Mkdir(c.dir, 0o755); err == nil || errors.Is(err, os.ErrExist) {
			if c.total > 0 {
				_ = os.WriteFile(filepath.Join(c.dir, c.file), []byte(strconv.FormatInt(c.total, 10)), 0)
			}
			err = os.Mkdir(dir, 0o755)
		}
	}
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, c.file), []byte(strconv.FormatInt(c.limit, 10)), 0); err != nil {
		removeCgroup(dir)
		return "", fmt.Errorf("%s: %w", c.file, err)
	}
	return dir, nil
}

// place puts pid (before it runs the command) into a fresh cgroup with the limit and returns a function that
// removes the cgroup once its processes are gone.
func (c *cgroupLimit) place(pid int) (func(), error) {
	dir, err := c.prepare()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		removeCgroup(dir)
		return nil, fmt.Errorf("cgroup.procs: %w", err)
	}
	return func() { go removeCgroup(dir) }, nil
}

// removeCgroup removes a per-command cgroup once its processes are gone (they are dying: their PID namespace is
// gone; rmdir succeeds once they are reaped).
func removeCgroup(dir string) {
	for i := 0; i < 100; i++ {
		if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// close removes the backend's parent cgroup (once the commands' cgroups are gone).
func (c *cgroupLimit) close() {
	go func() {
		for i := 0; i < 250; i++ {
			if err := os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
}

// atTotal says whether the backend's commands together hold as many processes as the total allows (pids only).
// The kernel does not count moving a process into a cgroup against pids.max, so a sandbox made now would go over
// the total by its keeper; it waits instead.
func (c *cgroupLimit) atTotal() bool {
	if c == nil || c.total <= 0 {
		return false
	}
	n, err := readInt(filepath.Join(c.dir, "pids.current"))
	return err == nil && n >= c.total
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
