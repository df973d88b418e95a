package cgroup

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Prefix starts the name of a backend's parent cgroup; the instance label follows.
const Prefix = "goalbox-exec-"

// Limit is one controller's limit for each command of a backend.
type Limit struct {
	dir   string // this backend's parent cgroup
	file  string // the limit file: pids.max, memory.max (v2) or memory.limit_in_bytes (v1)
	limit int64
	total int64 // on the parent: all commands together (0: none)
	seq   atomic.Int64
}

// Config is one controller's limits for a backend's commands.
type Config struct {
	// Controller is "pids" or "memory".
	Controller string
	// Instance names the backend: its parent cgroup is Prefix+Instance.
	Instance string
	// PerCommand is the limit of each command's own cgroup.
	PerCommand int64
	// Total, when positive, is written to the parent itself: a limit for all of the backend's commands together,
	// so that N concurrent bombs, each within its own limit, still cannot take the machine.
	Total int64
	// InstanceDead says whether the backend that named a parent cgroup Prefix+label is gone; New removes those
	// parents (a server killed with SIGKILL cannot remove its own). nil: none is removed.
	InstanceDead func(label string) bool
	Logger       *slog.Logger
}

// New makes a parent cgroup for a backend's commands under the server's own cgroup of cfg.Controller, or says why
// it cannot (no such controller, not enabled for the server's cgroup, no permission).
func New(cfg Config) (*Limit, error) {
	base, v2, err := OwnDir(cfg.Controller)
	if err != nil {
		return nil, err
	}
	file := cfg.Controller + ".max"
	if cfg.Controller == "memory" && !v2 {
		file = "memory.limit_in_bytes"
	}
	if cfg.InstanceDead != nil {
		removeStale(base, cfg.InstanceDead, cmp.Or(cfg.Logger, slog.Default()))
	}
	dir := filepath.Join(base, Prefix+cfg.Instance)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("the %s controller is not enabled for the server's cgroup", cfg.Controller)
	}
	if cfg.Total > 0 {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(cfg.Total, 10)), 0); err != nil {
			_ = os.Remove(dir)
			return nil, fmt.Errorf("the total %s limit: %w", cfg.Controller, err)
		}
	}
	return &Limit{dir: dir, file: file, limit: cfg.PerCommand, total: cfg.Total}, nil
}

// Dir is the backend's parent cgroup, where the kernel counts all of its commands together.
func (c *Limit) Dir() string { return c.dir }

// PerCommand is each command's limit.
func (c *Limit) PerCommand() int64 { return c.limit }

// Total is the limit of all commands together (0: none).
func (c *Limit) Total() int64 { return c.total }

// removeStale removes the parent cgroups (and their children) under base whose backend is gone. Their commands die
// with that server (parent-death signals), but a server started just after the kill finds some still dying, and a
// cgroup can be removed only once its last process is reaped: each child is tried again for a while, as a command's
// own cgroup is at its end (removeCgroup), and all are gone, or past hope, when New returns.
func removeStale(base string, dead func(label string) bool, logger *slog.Logger) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		label, ok := strings.CutPrefix(e.Name(), Prefix)
		if !ok || !e.IsDir() || !dead(label) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		kids, _ := os.ReadDir(dir)
		var wg sync.WaitGroup
		for _, k := range kids {
			if k.IsDir() {
				wg.Go(func() { removeCgroup(filepath.Join(dir, k.Name())) })
			}
		}
		wg.Wait()
		if err := os.Remove(dir); err == nil {
			logger.Info("removed the cgroup of a dead executor", "cgroup", dir)
		}
	}
}

// OwnDir finds the folder of the server's own cgroup for controller: in cgroup v1's hierarchy of that
// controller, or in cgroup v2's unified hierarchy.
func OwnDir(controller string) (dir string, v2 bool, err error) {
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
func (c *Limit) prepare() (string, error) {
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

// Place puts pid (before it runs the command) into a fresh cgroup with the limit and returns a function that
// removes the cgroup once its processes are gone.
func (c *Limit) Place(pid int) (func(), error) {
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

// Close removes the backend's parent cgroup (once the commands' cgroups are gone).
func (c *Limit) Close() {
	go func() {
		for i := 0; i < 250; i++ {
			if err := os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
}

// AtTotal says whether the backend's commands together hold as many processes as the total allows (pids only).
// The kernel does not count moving a process into a cgroup against pids.max, so a sandbox made now would go over
// the total by its keeper; it waits instead.
func (c *Limit) AtTotal() bool {
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
