package execserver

// A process limit per command from the pids cgroup controller, where the server may create cgroups (root on a
// host; usually not in a container). RLIMIT_NPROC cannot do this job: the kernel does not apply it to root, and it
// counts every process of the user, the server's own included. The limit counts threads as well as processes.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultPidsLimit is how many processes and threads one command may have at once: plenty for make -j, go test
// and jest workers, far below what a fork bomb wants.
const DefaultPidsLimit = 1024

type pidsCgroup struct {
	dir   string // this backend's parent cgroup
	limit int
	seq   atomic.Int64
}

// newPidsCgroup makes a parent cgroup for this backend's commands under the server's own pids cgroup.
func newPidsCgroup(instance string, limit int) (*pidsCgroup, error) {
	base, err := ownPidsCgroupDir()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(base, "goalbox-exec-"+instance)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "pids.max")); err != nil {
		_ = os.Remove(dir)
		return nil, errors.New("the pids controller is not enabled for the server's cgroup")
	}
	return &pidsCgroup{dir: dir, limit: limit}, nil
}

// ownPidsCgroupDir finds the folder of the server's own cgroup in the pids hierarchy: cgroup v1's pids controller,
// or cgroup v2's unified hierarchy.
func ownPidsCgroupDir() (string, error) {
	var v1Mount, v2Mount string
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer mi.Close()
	sc := bufio.NewScanner(mi)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		i := indexOf(f, "-")
		if i < 0 || len(f) < i+4 {
			continue
		}
		switch fstype, opts := f[i+1], f[i+3]; {
		case fstype == "cgroup" && hasOpt(opts, "pids"):
			v1Mount = f[4]
		case fstype == "cgroup2" && v2Mount == "":
			v2Mount = f[4]
		}
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case v1Mount != "" && hasOpt(parts[1], "pids"):
			return filepath.Join(v1Mount, parts[2]), nil
		case v1Mount == "" && v2Mount != "" && parts[0] == "0":
			return filepath.Join(v2Mount, parts[2]), nil
		}
	}
	return "", errors.New("no pids cgroup controller")
}

func indexOf(f []string, s string) int {
	for i, x := range f {
		if x == s {
			return i
		}
	}
	return -1
}

func hasOpt(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// place puts pid (before it runs the command) into a fresh cgroup with the limit and returns a function that
// removes the cgroup once its processes are gone.
func (c *pidsCgroup) place(pid int) (func(), error) {
	dir := filepath.Join(c.dir, strconv.FormatInt(c.seq.Add(1), 10))
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, os.ErrNotExist) {
		// Someone removed the backend's parent cgroup (it is empty between commands): make it again.
		if err = os.Mkdir(c.dir, 0o755); err == nil || errors.Is(err, os.ErrExist) {
			err = os.Mkdir(dir, 0o755)
		}
	}
	if err != nil {
		return nil, err
	}
	remove := func() {
		// The processes are dying (their PID namespace is gone); rmdir succeeds once they are reaped.
		for i := 0; i < 100; i++ {
			if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(c.limit)), 0); err != nil {
		remove()
		return nil, fmt.Errorf("pids.max: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		remove()
		return nil, fmt.Errorf("cgroup.procs: %w", err)
	}
	return func() { go remove() }, nil
}

// close removes the backend's parent cgroup (once the commands' cgroups are gone).
func (c *pidsCgroup) close() {
	go func() {
		for i := 0; i < 250; i++ {
			if err := os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
}
