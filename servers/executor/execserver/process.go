package execserver

// Long-running processes: a command started in the background (a dev server, a watcher, a REPL) that later calls
// read, write to, stop and list. Each is an ordinary backend Run in a goroutine of its own — the same confinement,
// user, limits and totals as sandbox_run_command — with its output in ring buffers, its stdin an open pipe when
// asked for, and the backend's Terminate channel for a stop. A process belongs to the MCP session that started it:
// when the session ends (closed, expired, deleted, the server stopping), its processes are killed. A process a
// stateless request started (MCP 2026-07-28 over HTTP) belongs to no session: its process_id is a handle
// (scope.go), and it ends when stopped, when no call has named it for the stateless idle timeout, or at shutdown.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/outputs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults for the process settings of Config.
const (
	DefaultMaxProcesses    = 8
	DefaultProcessLifetime = time.Hour
	DefaultProcessBuffer   = 1 << 20
	// DefaultProcessBufferTotal bounds the ring buffers of all processes of all sessions together: 256 MiB, the
	// full buffers of 128 chatty processes (at -max-sessions 256 × -max-processes 8 that is an eighth of them).
	DefaultProcessBufferTotal = 256 << 20
	defaultStopGrace          = 5 * time.Second
	maxStopGrace              = 60 * time.Second
	maxProcessWait            = 30 * time.Second
	maxProcessReadBytes       = 256 << 10 // of each stream per read; the client reads on from the offsets it gets
	endedProcessesPerSession  = 32        // ended processes a session keeps for reading, oldest forgotten first
	// DefaultStdinWriteTimeout: a process reading its input takes 64 KiB (a pipe's buffer) at once; one that has
	// not taken it in ten seconds is not reading.
	DefaultStdinWriteTimeout = 10 * time.Second
)

// process is one long-running process.
type process struct {
	id, command string
	started     time.Time
	stdout      *ringBuffer
	stderr      *ringBuffer
	// stdoutKept and stderrKept keep each stream whole once it outgrows its ring buffer (process_outputs.go);
	// nil when the executor keeps no full outputs.
	stdoutKept, stderrKept *outputs.Stream

	stdinMu   sync.Mutex
	stdin     *io.PipeWriter // nil when closed
	stdinTurn chan struct{}  // held (a value in it) by the write to stdin in progress, which may outlast its call
	stdinR    *io.PipeReader // closed when the process ends, so a write it will never read fails at once

	terminate     chan struct{}
	terminateOnce sync.Once
	runCtx        context.Context // the backend's Run's; kill ends it
	kill          context.CancelFunc

	done   chan struct{}  // closed when the backend's Run returned
	result backend.Result // valid once done
	ended  time.Time

	// named is when a call last named the process (started, read, written, stopped), for the stateless era's idle
	// expiry; guarded by processTable.mu.
	named time.Time
}

func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// exitCode is nil while the process runs.
func (p *process) exitCode() *int {
	if p.running() {
		return nil
	}
	c := p.result.ExitCode
	return &c
}

func (p *process) duration() time.Duration {
	if p.running() {
		return time.Since(p.started)
	}
	return p.ended.Sub(p.started)
}

func (p *process) closeStdin() {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin != nil {
		p.stdin.Close()
		p.stdin = nil
	}
}

var errProcessEnded = errors.New("the process has ended")

// processSettings are what every process is made with.
type processSettings struct {
	max int // processes one session may run at once (Config.MaxProcesses)
	// statelessMax is how many processes the stateless era runs at once, all its clients together
	// (Config.StatelessProcesses); statelessIdle and statelessUnused forget a stateless process no call named for
	// that long, running or ended (Config.StatelessIdleTimeout, StatelessUnusedTimeout).
	statelessMax                   int
	statelessIdle, statelessUnused time.Duration
	lifetime                       time.Duration // a process running longer is killed (Config.ProcessLifetime)
	buffer                         int           // each stream's ring buffer (Config.ProcessBuffer)
	buffers                        *bufferPool   // the ring buffers of all processes together
	outputs                        *outputs.Store
	run                            runner
	logger                         *slog.Logger
}

// processTable is the executor's processes: a session's by session, a stateless request's by handle. It is below
// the process tools (process_tools.go), which call it, and knows nothing of them.
type processTable struct {
	processSettings
	mu        sync.Mutex
	bySession map[*mcp.ServerSession][]*process
	seq       int
	byHandle  map[string]*process // the stateless era's, by process_id
	reaping   sync.Once           // the stateless era's reaper, started with its first process
	stop      chan struct{}       // closed by endAll: the reaper ends
	closed    bool
}

func newProcessTable(s processSettings) *processTable {
	return &processTable{processSettings: s, bySession: map[*mcp.ServerSession][]*process{}, byHandle: map[string]*process{}, stop: make(chan struct{})}
}

// newProcess is a process of r that has not started yet.
func (t *processTable) newProcess(id string, r backend.Request) *process {
	now := time.Now()
	// The kill exists before the process is in a table: a shutdown or expiry that finds it there may call it at once.
	ctx, kill := context.WithCancel(context.Background())
	return &process{id: id, command: r.Command, started: now, named: now, runCtx: ctx, kill: kill,
		stdout: newRingBuffer(t.buffer, t.buffers), stderr: newRingBuffer(t.buffer, t.buffers),
		terminate: make(chan struct{}), done: make(chan struct{}), stdinTurn: make(chan struct{}, 1)}
}

// start runs r in the background as a process of sc, within its cap: a session's (max), or all stateless
// requests' together (statelessMax).
func (t *processTable) start(sc scope, r backend.Request, openStdin bool) (*process, error) {
	if sc.stateless {
		return t.startStateless(r, openStdin)
	}
	ss := sc.ss
	t.mu.Lock()
	running := 0
	for _, p := range t.bySession[ss] {
		if p.running() {
			running++
		}
	}
	if running >= t.max {
		t.mu.Unlock()
		return nil, fmt.Errorf("this session already runs %d processes, the most it may (the executor's -max-processes); stop one with %s first",
			running, protocol.ToolStopProcess)
	}
	first := len(t.bySession[ss]) == 0
	t.seq++
	p := t.newProcess("p"+strconv.Itoa(t.seq), r)
	t.bySession[ss] = append(t.bySession[ss], p)
	t.forgetEnded(ss)
	t.mu.Unlock()
	if first && ss != nil {
		go func() {
			_ = ss.Wait() // the session ended: its processes end with it
			t.endSession(ss)
		}()
	}

	t.keepStreams(sc, p)
	t.launch(p, r, openStdin)
	return p, nil
}

// launch starts p's command in the background.
func (t *processTable) launch(p *process, r backend.Request, openStdin bool) {
	ctx, kill := p.runCtx, p.kill
	r.Timeout = t.lifetime
	r.Stdout, r.Stderr, r.Terminate = p.stdout, p.stderr, p.terminate
	if openStdin {
		pr, pw := io.Pipe()
		p.stdin, p.stdinR, r.StdinStream = pw, pr, pr
	}
	go func() {
		defer close(p.done)
		defer kill()
		res, undone, err := t.run.run(ctx, r)
		if len(undone) > 0 {
			_, _ = p.stderr.Write([]byte(protectedNote(undone)))
		}
		if p.stdinR != nil {
			p.stdinR.CloseWithError(errProcessEnded)
		}
		if err != nil {
			t.logger.Error("process could not run", "process", p.id, "error", err)
			_, _ = fmt.Fprintf(p.stderr, "\n[the process %s]\n", t.run.failure(err))
			res = backend.Result{ExitCode: -1}
		}
		p.closeKept()
		p.stdout.shrink()
		p.stderr.shrink()
		p.result, p.ended = res, time.Now()
		t.logger.Debug("process ended", "process", p.id, "exit_code", res.ExitCode, "timed_out", res.TimedOut)
	}()
}

// forgetEnded drops a session's oldest ended processes past endedProcessesPerSession (t.mu held).
func (t *processTable) forgetEnded(ss *mcp.ServerSession) {
	procs := t.bySession[ss]
	ended := 0
	for _, p := range procs {
		if !p.running() {
			ended++
		}
	}
	kept := procs[:0]
	for _, p := range procs {
		if ended > endedProcessesPerSession && !p.running() {
			ended--
			p.stdout.release()
			p.stderr.release()
			continue
		}
		kept = append(kept, p)
	}
	t.bySession[ss] = kept
}

// lookup finds the process id for a call of sc: a stateless process by its handle, from any scope (the handle is
// the capability); else a process of sc's own session. Another session's process is not found, nor is a session's
// process id sent statelessly.
func (t *processTable) lookup(sc scope, id string) (*process, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.byHandle[id]; p != nil {
		p.named = time.Now()
		return p, nil
	}
	if sc.stateless {
		return nil, fmt.Errorf("no process %q: a request without a session (MCP %s) reaches a process only by the process_id its %s returned "+
			"(a session's ids such as p1 mean nothing here); it may have been stopped, or forgotten after %v unread (%v once ended)",
			id, mcpserve.StatelessVersion, protocol.ToolStartProcess, t.statelessIdle, t.statelessUnused)
	}
	for _, p := range t.bySession[sc.ss] {
		if p.id == id {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no process %q in this session: %s lists this session's processes (a process belongs to the session that started it)",
		id, protocol.ToolListProcesses)
}

// stop sends SIGTERM to p's whole tree, waits up to grace for it to end, then kills it.
func (p *process) stop(grace time.Duration) (killed bool) {
	if !p.running() {
		return p.result.ExitCode == -1
	}
	p.terminateOnce.Do(func() { close(p.terminate) })
	select {
	case <-p.done:
		return false
	case <-time.After(grace):
	}
	p.kill()
	<-p.done
	return true
}

// endSession kills every process of a session that ended, and forgets them.
func (t *processTable) endSession(ss *mcp.ServerSession) {
	t.mu.Lock()
	procs := t.bySession[ss]
	delete(t.bySession, ss)
	t.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
	for _, p := range procs {
		<-p.done
		p.stdout.release()
		p.stderr.release()
	}
	if len(procs) > 0 {
		t.logger.Info("session ended: its processes were killed", "processes", len(procs))
	}
}

// endAll kills every process of every session and of the stateless era, and stops the stateless reaper.
func (t *processTable) endAll() {
	t.mu.Lock()
	sessions := make([]*mcp.ServerSession, 0, len(t.bySession))
	for ss := range t.bySession {
		sessions = append(sessions, ss)
	}
	if !t.closed {
		t.closed = true
		close(t.stop)
	}
	stateless := t.byHandle
	t.byHandle = map[string]*process{}
	t.mu.Unlock()
	for _, ss := range sessions {
		t.endSession(ss)
	}
	t.forget(stateless)
}

// list is a session's processes, oldest first; a stateless request's list is empty (scope.go).
func (t *processTable) list(sc scope) []*process {
	if sc.stateless {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	procs := append([]*process(nil), t.bySession[sc.ss]...)
	sort.SliceStable(procs, func(i, j int) bool { return procs[i].started.Before(procs[j].started) })
	return procs
}
