package local

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/confine"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/landlock"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/layer"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/proctree"
	"golang.org/x/sys/unix"
)

// nsInitScript is PID 1 of each command's PID namespace: the shell that runs the command. The sandbox is made
// before its command is known (nsPool), so the shell first reads, from its stdin, a header the server writes when
// the command comes (nsHeader): three counts, then the working folder and the command, each that many lines, and
// when the third is 1 the egress proxy's URL for this command alone, exported as the proxy variables.
// dash's read builtin takes one byte at a time from a pipe, so whatever follows the header is left unread for the
// command, as its own stdin. It then evaluates the command as sh -c would: $0 is "sh", there are no positional
// parameters. The trailing exit keeps sh from exec'ing the command's last program in its own place, so every
// program the command runs is a child of this shell, with normal signal handling, and the shell reaps orphans while
// it waits. The shell itself is PID 1, which the kernel shields from every signal it does not trap (as in a
// container without an init): so it traps SIGTERM and exits 143, as a plain sh -c ended by SIGTERM would report,
// once the program it waits for has ended. Without the trap a stop's SIGTERM killed `sleep 30` in `sleep 30; echo
// after` and the shell went on to print "after". A command may set its own trap. A header cut short (the server
// discarded the sandbox) ends it with 125.
const nsInitScript = `__goalbox_lines() {
	IFS= read -r __goalbox_v || exit 125
	__goalbox_n=$1
	while [ "$__goalbox_n" -gt 1 ]; do
		IFS= read -r __goalbox_l || exit 125
		__goalbox_v="$__goalbox_v
$__goalbox_l"
		__goalbox_n=$((__goalbox_n - 1))
	done
}
read -r __goalbox_nd __goalbox_nc __goalbox_np || exit 125
__goalbox_lines "$__goalbox_nd"; __goalbox_dir=$__goalbox_v
__goalbox_lines "$__goalbox_nc"; __goalbox_command=$__goalbox_v
if [ "${__goalbox_np:-0}" -gt 0 ]; then
	IFS= read -r __goalbox_l || exit 125
	export HTTP_PROXY="$__goalbox_l" HTTPS_PROXY="$__goalbox_l" ALL_PROXY="$__goalbox_l" \
		http_proxy="$__goalbox_l" https_proxy="$__goalbox_l" all_proxy="$__goalbox_l"
fi
cd -P -- "$__goalbox_dir" || exit 125
unset -f __goalbox_lines
unset __goalbox_v __goalbox_n __goalbox_l __goalbox_nd __goalbox_nc __goalbox_np __goalbox_dir OLDPWD
trap 'exit 143' TERM
eval "$__goalbox_command"; exit $?`

// nsHeader is what nsInitScript reads before the command's stdin. proxyURL, when not empty, is the egress proxy's
// URL with this command's own credentials (egress_linux.go): the shell exports it as egress.ProxyVars, whose names
// it spells itself, so that the header it reads a byte at a time stays short.
func nsHeader(dir, command, proxyURL string) string {
	lines := func(s string) int { return strings.Count(s, "\n") + 1 }
	np := 0
	if proxyURL != "" {
		np = 1
	}
	h := fmt.Sprintf("%d %d %d\n%s\n%s\n", lines(dir), lines(command), np, dir, command)
	if np == 1 {
		h += strings.ReplaceAll(proxyURL, "\n", "") + "\n"
	}
	return h
}

// forkThread is one locked OS thread that every command is forked from: a keeper's parent-death signal fires when
// the thread that forked it ends, so that thread must live as long as the backend, and no longer.
type forkThread struct {
	reqs chan func()
	once sync.Once
}

func newForkThread() *forkThread {
	t := &forkThread{reqs: make(chan func())}
	go func() {
		// Never unlocked: when the loop ends (Close) the thread exits with the goroutine, and every keeper still
		// running gets SIGKILL, and with it its PID 1 and the whole namespace.
		runtime.LockOSThread()
		for f := range t.reqs {
			f()
		}
	}()
	return t
}

func (t *forkThread) do(f func()) error {
	done := make(chan struct{})
	var err error
	func() {
		defer func() {
			if recover() != nil {
				err = fmt.Errorf("the backend is closed")
			}
		}()
		t.reqs <- func() { f(); close(done) }
	}()
	if err != nil {
		return err
	}
	<-done
	return nil
}

func (t *forkThread) close() { t.once.Do(func() { close(t.reqs) }) }

// nsSandbox is what the namespace mode prepares once per backend: the holder, which holds the namespaces and
// forks every sandbox, and the thread it hangs on.
type nsSandbox struct {
	holder *holder
	thread *forkThread
	policy *commandPolicy
}

// ruleset builds a sandbox's Landlock ruleset (about a millisecond: some 40 paths opened and added); its PID 1 adds
// its own /proc to it and enters it.
func (s *nsSandbox) ruleset(cl *layer.Layer) (int, error) {
	rules := s.policy.Rules
	if cl != nil {
		// The layer's mounts are new inodes: Landlock skips the mountpoints they cover on its way up a path, so the
		// holder's /dev/shm no longer grants the command's own. Named through this process's descriptors of them.
		rules.ShmDir = cl.ShmPath()
		rules.WriteDirs = slices.Concat(rules.WriteDirs, []string{cl.OverlayPath()}, cl.PrivatePaths())
	}
	fd, _, err := landlock.RulesetFD(rules)
	if err == nil && fd < 0 {
		err = errors.New("the kernel has no Landlock")
	}
	return fd, err
}

func (s *nsSandbox) close() {
	s.holder.close()
	s.thread.close()
}

// nsStarted is a keeper, stopped at its go-ahead, with the server's ends of its pipes.
type nsStarted struct {
	keeper                   *os.Process
	pid                      int
	stdinW, stdoutR, stderrR *os.File
	syncW, reportR           *os.File
}

// start has the holder fork a new sandbox's keeper, with cl's mounts to attach when cl is not nil. The
// caller sets limits on the keeper, then calls goAhead.
func (s *nsSandbox) start(cl *layer.Layer) (*nsStarted, error) {
	st := &nsStarted{}
	var theirs []*os.File // the keeper's ends, closed here once it has them
	defer func() {
		for _, f := range theirs {
			f.Close()
		}
	}()
	fail := func(err error) (*nsStarted, error) {
		for _, f := range []*os.File{st.stdinW, st.stdoutR, st.stderrR, st.syncW, st.reportR} {
			if f != nil {
				f.Close()
			}
		}
		return nil, err
	}
	var ends [5][2]*os.File
	for i := range ends {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		ends[i] = [2]*os.File{r, w}
	}
	st.stdinW, st.stdoutR, st.stderrR, st.syncW, st.reportR = ends[0][1], ends[1][0], ends[2][0], ends[3][1], ends[4][0]
	theirs = append(theirs, ends[0][0], ends[1][1], ends[2][1], ends[3][0], ends[4][1])
	var flags byte
	if s.policy.Landlock == protocol.LandlockEnforced {
		fd, err := s.ruleset(cl)
		if err != nil {
			return fail(fmt.Errorf("landlock ruleset: %w", err))
		}
		theirs = append(theirs, os.NewFile(uintptr(fd), "landlock-ruleset"))
		flags |= forkRuleset
	}
	fds := make([]int, len(theirs))
	for i, f := range theirs {
		fds[i] = int(f.Fd())
	}
	if cl != nil {
		for _, m := range cl.Mounts() {
			fds = append(fds, int(m.Fd()))
		}
		flags |= forkLayer
	}
	pid, err := s.holder.forkKeeper(flags, fds)
	cl.Release() // the keeper has its own copies now
	if err != nil {
		return fail(err)
	}
	st.pid = pid
	if st.keeper, err = os.FindProcess(pid); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		return fail(err)
	}
	return st, nil
}

// goAhead lets the keeper go on and waits until PID 1 has executed the shell or the setup failed.
func (st *nsStarted) goAhead() error {
	_, _ = st.syncW.Write([]byte{'g'})
	st.syncW.Close()
	var rep [8]byte
	n, _ := io.ReadFull(st.reportR, rep[:])
	st.reportR.Close()
	if n == 0 {
		return nil
	}
	step := binary.NativeEndian.Uint32(rep[:4])
	errno := syscall.Errno(binary.NativeEndian.Uint32(rep[4:]))
	return fmt.Errorf("sandbox setup failed %s: %w", stepNames[step], errno)
}

// nsPoolSize is how many namespace sandboxes wait ready for their command: one for the next command, one for a
// command that comes alongside it (each is two sleeping processes and a few pipes).
const nsPoolSize = 2

// nsPrepared is a sandbox made ahead of its command: in its cgroups, under its rlimits, PID 1's shell reading its
// stdin for the command's header.
type nsPrepared struct {
	*nsStarted
	release func()       // removes its cgroups
	gen     int64        // the backend's protectGen when it was made: an older one misses a read-only mount
	layer   *layer.Layer // the command's own layer of the workspace (package layer); nil without
	made    time.Time    // when its layer was sized (layerFresh)
}

// prepareNamespaced makes a sandbox of ns for the next command. It takes ns rather than reading b.ns: a spawn
// under way in the background must not see the backend drop a sandbox that failed its probe.
func (b *localBackend) prepareNamespaced(ns *nsSandbox) (*nsPrepared, error) {
	gen := b.protectGen.Load()
	cl, err := b.newLayer(ns)
	if err != nil {
		return nil, err
	}
	st, err := ns.start(cl)
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("start the sandbox: %w", err)
	}
	p := &nsPrepared{nsStarted: st, release: func() {}, gen: gen, layer: cl, made: time.Now()}
	if b.pids.AtTotal() {
		p.discard()
		return nil, errAtTotal
	}
	// rlimits and cgroups go on the keeper before it goes on: PID 1 and everything under it inherit them.
	for _, r := range b.policy.Rlimits {
		lim := unix.Rlimit{Cur: r.Value, Max: r.Value}
		var old unix.Rlimit
		if unix.Prlimit(st.pid, confine.RlimitByName[r.Name], nil, &old) == nil && old.Max < lim.Max {
			lim = unix.Rlimit{Cur: old.Max, Max: old.Max} // lower only, never raise
		}
		if err := unix.Prlimit(st.pid, confine.RlimitByName[r.Name], &lim, nil); err != nil {
			p.discard()
			return nil, fmt.Errorf("set rlimit %s: %w", r.Name, err)
		}
	}
	if p.release, err = b.placeInCgroups(st.pid); err != nil {
		p.release = func() {}
		p.discard()
		return nil, fmt.Errorf("cgroup limits: %w", err)
	}
	if err := st.goAhead(); err != nil {
		p.discard()
		return nil, err
	}
	return p, nil
}

// discard ends a sandbox that will run no command (or whose command ended).
func (p *nsPrepared) discard() {
	for _, f := range []*os.File{p.syncW, p.reportR, p.stdinW, p.stdoutR, p.stderrR} {
		f.Close()
	}
	_ = p.keeper.Kill()
	_, _ = p.keeper.Wait()
	p.release()
	p.layer.Close()
}

// errAtTotal: the backend's commands together hold every process the total allows.
var errAtTotal = errors.New("the executor's commands together hold every process its total allows")

// takeSandbox takes a ready sandbox. When the commands running now hold every process the total allows (so no
// sandbox can be made: its PID 1 cannot be forked), it tries again until some end, or until timeout.
func (b *localBackend) takeSandbox(ctx context.Context, timeout time.Duration) (*nsPrepared, error) {
	deadline := time.Now().Add(timeout)
	for {
		st, err := b.nsPool.Take()
		if err == nil && (st.gen != b.protectGen.Load() || st.layer != nil && time.Since(st.made) > layerFresh) {
			// Made before the holder's latest read-only mount (its namespace lacks it), or its layer sized before a
			// command's changes were applied or longer ago than layerFresh (the workspace may have grown since).
			st.discard()
			st, err = b.prepareNamespaced(b.ns)
		}
		if err == nil || !(errors.Is(err, errAtTotal) || errors.Is(err, syscall.EAGAIN)) {
			return st, err
		}
		if time.Now().After(deadline) {
			limit := "the user's process limit (RLIMIT_NPROC)"
			if b.pids != nil && b.pids.Total() > 0 {
				limit = fmt.Sprintf("all %d processes its -total-pids-limit allows", b.pids.Total())
			}
			return nil, fmt.Errorf("the executor's commands already running hold %s, and none ended within this call's timeout of %v; "+
				"try again later", limit, timeout)
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// runNamespaced runs req in a sandbox of its own, made ahead (nsPool). Killing the keeper kills PID 1 and with it
// the namespace.
func (b *localBackend) runNamespaced(ctx context.Context, req backend.Request) (res backend.Result, err error) {
	defer b.nsPool.Refill() // the next command's sandbox is made after this one ends
	start := time.Now()
	st, err := b.takeSandbox(ctx, req.Timeout)
	if err != nil {
		return backend.Result{}, err
	}
	if waited := time.Since(start); waited > 100*time.Millisecond {
		req.Timeout = max(req.Timeout-waited, time.Second) // the wait counts against the call's timeout
	}
	defer st.stdoutR.Close()
	defer st.stderrR.Close()
	defer st.release()
	defer st.layer.Close()

	egr, egrEnv := b.egress.begin() // nil without -net-allow
	defer func() {
		// The command's tunnels close; what it reached and was refused goes in its result.
		u := egr.End()
		res.NetworkDenied, res.Network = u.Denied, u.Hosts
	}()
	finishOutput := copyOutput(st.stdoutR, st.stderrR, req.Stdout, req.Stderr)
	disk := b.armDisk() // the header on stdin starts the command
	feedStdin(st.stdinW, nsHeader(filepath.Join(b.workspace, filepath.FromSlash(req.Dir)), req.Command, egrEnv), req)
	// PID 1 (the shell) ignores SIGTERM, as a namespace's init without a handler does; everything below it gets it.
	// SIGTERM to the whole tree, the shell (PID 1) too, so that a compound command ends rather than going on to its
	// next part: PID 1 traps it (nsInitScript) and ends with 143, as the fallback's shell does.
	defer onTerminate(req.Terminate, func() { proctree.Signal(st.pid, 0, syscall.SIGTERM) })()
	kill := func() { _ = st.keeper.Kill() }
	stopDisk := b.watchDisk(ctx, disk, st.pid, kill)
	// The command's changes reach the workspace only here, through the guard: while it runs and once it ended,
	// whatever way it ended (layerrun_linux.go).
	finishLayer := b.watchLayer(req, st.layer)
	if st.layer != nil && st.layer.OverCap != "" {
		defer func() { _, _ = req.Stderr.Write([]byte(st.layer.OverCap)) }()
	}
	defer func() { res.WorkspaceRefused = finishLayer() }()
	ps, killed, timedOut := waitOrKill(ctx, req.Timeout, func() *os.ProcessState { ps, _ := st.keeper.Wait(); return ps }, kill)
	// Every process of the namespace died with PID 1, so the pipes are at EOF.
	finishOutput()
	if diskKill, used := stopDisk(); diskKill {
		return diskKilled(req, used, b.maxDisk), nil
	}
	if killed {
		return backend.Result{ExitCode: -1, TimedOut: timedOut}, nil
	}
	if ps == nil {
		return backend.Result{}, errors.New("lost the sandbox's keeper process")
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || ws.Signaled() {
		return backend.Result{ExitCode: -1}, nil
	}
	return backend.Result{ExitCode: ws.ExitStatus()}, nil
}
