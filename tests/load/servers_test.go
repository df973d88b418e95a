package load

// The servers under test, as separate processes built from this repository, and what /proc and /sys/fs/cgroup
// say about them.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// binaries builds both servers (go build, into dir) from the repository two folders up.
func binaries(t *testing.T, dir string) (fsBin, execBin string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("the repository root (with go.work) should be two folders up from tests/load: %v", err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the servers: %v", err)
	}
	fsBin, execBin = filepath.Join(dir, "goalbox-fs"), filepath.Join(dir, "goalbox-exec")
	for bin, pkg := range map[string]string{fsBin: "./servers/filesystem", execBin: "./servers/executor"} {
		cmd := exec.Command(goBin, "build", "-o", bin, pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return fsBin, execBin
}

// healthClient asks /healthz without keeping the connection, which would otherwise count as the server's
// descriptor and goroutine.
var healthClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}

// server is one running server process.
type server struct {
	name  string
	pid   int
	url   string    // the MCP endpoint
	token string    // the bearer token it generated, from its token file
	log   string    // its stderr
	t0    time.Time // when it started, the origin of its gctrace times
	cmd   *exec.Cmd
	done  chan struct{}
	err   error // from Wait, once done is closed
}

// startServer starts bin with args plus -addr 127.0.0.1:0, finds the port it listens on from /proc (its listening
// socket), and waits until /healthz answers. The process is killed at the end of the test if still running.
func startServer(t *testing.T, name, bin, logDir string, args ...string) *server {
	t.Helper()
	s := &server{name: name, log: filepath.Join(logDir, name+".log"), done: make(chan struct{})}
	logf, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	// No token is given: the server generates one, as for a user, and the clients send it on every request (its
	// check is part of what a request costs).
	tokenFile := filepath.Join(logDir, name+".token")
	s.cmd = exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-token-file", tokenFile}, args...)...)
	s.cmd.Stderr = logf
	s.cmd.Stdout = logf
	dieWithTest(s.cmd)
	// Flags set everything the test depends on; the environment must not switch on anything else (a token, the
	// docker backend...) that a CI machine happens to export.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOALBOX_FS_") && !strings.HasPrefix(kv, "GOALBOX_EXEC_") && !strings.HasPrefix(kv, "GODEBUG=") {
			s.cmd.Env = append(s.cmd.Env, kv)
		}
	}
	s.cmd.Env = append(s.cmd.Env, "GODEBUG=gctrace=1")
	s.t0 = time.Now()
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	s.pid = s.cmd.Process.Pid
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-s.done:
			t.Fatalf("%s exited at start: %v\n%s", name, s.err, s.logTail(4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer /healthz within 60 s\n%s", name, s.logTail(4000))
		}
		for _, port := range listeningPorts(s.pid, s.log) {
			base := "http://127.0.0.1:" + strconv.Itoa(port)
			resp, err := healthClient.Get(base + "/healthz")
			if err != nil {
				continue
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					t.Fatalf("%s wrote no token file: %v\n%s", name, err, s.logTail(4000))
				}
				s.url, s.token = base+"/mcp", strings.TrimSpace(string(b))
				return s
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) logTail(n int) string {
	b, _ := os.ReadFile(s.log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return s.name + " log:\n" + string(b)
}

// gcEvent is one garbage collection, from the gctrace=1 line the server writes to stderr.
type gcEvent struct {
	at     time.Time // when it started
	liveMB int       // heap live after it (MB, rounded down as gctrace prints it)
	goalMB int       // the heap goal it set
	forced bool      // forced by the runtime (no GC for two minutes)
}

var gcLine = regexp.MustCompile(`(?m)^gc \d+ @([0-9.]+)s .*? [0-9]+->[0-9]+->([0-9]+) MB, ([0-9]+) MB goal.*$`)

// gcs are the server's garbage collections so far.
func (s *server) gcs() []gcEvent {
	b, _ := os.ReadFile(s.log)
	var out []gcEvent
	for _, m := range gcLine.FindAllSubmatch(b, -1) {
		sec, _ := strconv.ParseFloat(string(m[1]), 64)
		live, _ := strconv.Atoi(string(m[2]))
		goal, _ := strconv.Atoi(string(m[3]))
		out = append(out, gcEvent{at: s.t0.Add(time.Duration(sec * float64(time.Second))), liveMB: live, goalMB: goal, forced: bytes.Contains(m[0], []byte("(forced)"))})
	}
	return out
}

// gcsSince are the collections that started after t.
func (s *server) gcsSince(t time.Time) []gcEvent {
	var out []gcEvent
	for _, g := range s.gcs() {
		if g.at.After(t) {
			out = append(out, g)
		}
	}
	return out
}

var goroutineHeader = regexp.MustCompile(`(?m)^goroutine \d+ (gp=\S+ m=\S+ )?\[.*\]:$`)

// quitForGoroutines ends the server with SIGQUIT, whose stack dump lists every goroutine (the servers expose no
// pprof), and returns how many there were, leaving out those the runtime made for itself (GC workers start at the
// first collection, so they say nothing about leaks), and how many each "created by" function made.
func (s *server) quitForGoroutines() (int, map[string]int, error) {
	before, _ := os.ReadFile(s.log)
	if err := s.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		return 0, nil, err
	}
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		return 0, nil, fmt.Errorf("%s did not exit on SIGQUIT", s.name)
	}
	all, err := os.ReadFile(s.log)
	if err != nil {
		return 0, nil, err
	}
	dump := all[len(before):]
	heads := goroutineHeader.FindAllIndex(dump, -1)
	if len(heads) == 0 {
		return 0, nil, fmt.Errorf("%s: no goroutine dump after SIGQUIT (exit: %v)\n%s", s.name, s.err, s.logTail(3000))
	}
	n, created := 0, map[string]int{}
	for i, h := range heads {
		end := len(dump)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		creator := "(none)"
		for _, l := range strings.Split(string(dump[h[0]:end]), "\n") {
			if f := strings.Fields(strings.TrimPrefix(l, "created by ")); strings.HasPrefix(l, "created by ") && len(f) > 0 {
				creator = f[0]
			}
		}
		created[creator]++
		if !strings.HasPrefix(creator, "runtime.") {
			n++
		}
	}
	return n, created, nil
}

var servingURL = regexp.MustCompile(`"url":"http://127\.0\.0\.1:(\d+)/`)

// listeningPorts are the TCP ports pid listens on: its socket inodes matched against the test's own
// /proc/self/net/tcp{,6} (the listener is in the test's network namespace, since the test reaches it;
// /proc/PID/net shows the namespace of the server's main thread, which the executor may have moved elsewhere).
//
// Where /proc/PID/fd cannot be read (a non-root executor makes itself non-dumpable), the port comes from the
// "serving" line of the server's log.
func listeningPorts(pid int, log string) []int {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		b, _ := os.ReadFile(log)
		if m := servingURL.FindSubmatch(b); m != nil {
			p, _ := strconv.Atoi(string(m[1]))
			return []int{p}
		}
		return nil
	}
	inodes := map[string]bool{}
	for _, e := range ents {
		l, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile("/proc/self/net/" + f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fl := strings.Fields(line)
			if len(fl) < 10 || fl[3] != "0A" || !inodes[fl[9]] { // 0A: LISTEN
				continue
			}
			if i := strings.LastIndexByte(fl[1], ':'); i >= 0 {
				if p, err := strconv.ParseUint(fl[1][i+1:], 16, 16); err == nil {
					ports = append(ports, int(p))
				}
			}
		}
	}
	return ports
}

// procStat is what /proc says about one process.
type procStat struct {
	rssKB, hwmKB   int64 // VmRSS, VmHWM (peak RSS)
	anonKB, fileKB int64 // RssAnon (heap, stacks), RssFile (mapped files: the binary's pages)
	threads        int
	fds            int           // -1 when /proc/PID/fd cannot be read (a non-root executor makes itself non-dumpable)
	cpu            time.Duration // utime + stime of the process itself
	childCPU       time.Duration // cutime + cstime: its reaped children (the executor's commands)
}

// clockTick is USER_HZ, 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

func readProc(pid int) (procStat, error) {
	var st procStat
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			st.rssKB = n
		case "VmHWM:":
			st.hwmKB = n
		case "RssAnon:":
			st.anonKB = n
		case "RssFile:":
			st.fileKB = n
		case "Threads:":
			st.threads = int(n)
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	switch {
	case errors.Is(err, fs.ErrPermission):
		st.fds = -1
	case err != nil:
		return st, err
	default:
		st.fds = len(fds)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, err
	}
	// Fields after the command name (which may hold spaces and parentheses): state is field 3, utime 14.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 15 {
		return st, fmt.Errorf("short /proc/%d/stat", pid)
	}
	tick := func(i int) time.Duration {
		n, _ := strconv.ParseInt(f[i-3], 10, 64)
		return time.Duration(n) * clockTick
	}
	st.cpu = tick(14) + tick(15)
	st.childCPU = tick(16) + tick(17)
	return st, nil
}

// descendantPIDs are the live processes below pid (children, theirs, ...), with their command names.
func descendantPIDs(pid int) map[int]string {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	comm := map[int]string{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		lp, rp := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if lp < 0 || rp < lp {
			continue
		}
		f := strings.Fields(string(stat[rp+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], p)
		comm[p] = "(" + string(stat[lp+1:rp]) + ")"
	}
	out := map[int]string{}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out[c] = comm[c]
			queue = append(queue, c)
		}
	}
	return out
}

// descendants are the live processes below pid, each as "PID (command)".
func descendants(pid int) []string {
	var out []string
	for p, c := range descendantPIDs(pid) {
		out = append(out, fmt.Sprintf("%d %s", p, c))
	}
	sort.Strings(out)
	return out
}

const cgroupRoot = "/sys/fs/cgroup"

// goalboxCgroups are the cgroup folders named goalbox* anywhere under /sys/fs/cgroup (not those inside them).
func goalboxCgroups() map[string]bool {
	found := map[string]bool{}
	_ = filepath.WalkDir(cgroupRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != cgroupRoot {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), "goalbox") {
			found[p] = true
			return fs.SkipDir
		}
		return nil
	})
	return found
}

// newCgroups are the cgroup folders in now and not in before, sorted.
func newCgroups(before, now map[string]bool) []string {
	var out []string
	for p := range now {
		if !before[p] {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// cgroupUsage counts the cgroups below dirs (a command's own cgroups) and the processes in dirs and below.
func cgroupUsage(dirs []string) (subgroups, procs int) {
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return nil
			}
			if p != d {
				subgroups++
			}
			if b, err := os.ReadFile(filepath.Join(p, "cgroup.procs")); err == nil {
				procs += len(strings.Fields(string(b)))
			}
			return nil
		})
	}
	return subgroups, procs
}

// removeCgroups removes dirs and the cgroups below them, deepest first; it fails on one that still has processes.
func removeCgroups(dirs []string) error {
	var errs []error
	for _, d := range dirs {
		var all []string
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				all = append(all, p)
			}
			return nil
		})
		slices.Reverse(all)
		for _, p := range all {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// waitFor polls cond every 100 ms until it holds or d passes; it reports whether it held.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}
