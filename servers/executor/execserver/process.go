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
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
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
	// stdoutKept and stderrKept keep each stream whole once it outgrows its ring buffer (outputs_process.go);
	// nil when the executor keeps no full outputs.
	stdoutKept, stderrKept *KeptStream

	stdinMu   sync.Mutex
	stdin     *io.PipeWriter // nil when closed
	stdinTurn chan struct{}  // held (a value in it) by the write to stdin in progress, which may outlast its call
	stdinR    *io.PipeReader // closed when the process ends, so a write it will never read fails at once

	terminate     chan struct{}
	terminateOnce sync.Once
	runCtx        context.Context // the backend's Run's; kill ends it
	kill          context.CancelFunc

	done   chan struct{} // closed when the backend's Run returned
	result Result        // valid once done
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

// processTable is the executor's processes: a session's by session, a stateless request's by handle.
type processTable struct {
	mu        sync.Mutex
	bySession map[*mcp.ServerSession][]*process
	seq       int
	byHandle  map[string]*process // the stateless era's, by process_id
	reaping   sync.Once           // the stateless era's reaper, started with its first process
	stop      chan struct{}       // closed by Close: the reaper ends
	closed    bool
}

func newProcessTable() *processTable {
	return &processTable{bySession: map[*mcp.ServerSession][]*process{}, byHandle: map[string]*process{}, stop: make(chan struct{})}
}

// newProcess is a process of r that has not started yet.
func (e *Executor) newProcess(id string, r Request) *process {
	now := time.Now()
	// The kill exists before the process is in a table: a shutdown or expiry that finds it there may call it at once.
	ctx, kill := context.WithCancel(context.Background())
	return &process{id: id, command: r.Command, started: now, named: now, runCtx: ctx, kill: kill,
		stdout: newRingBuffer(e.cfg.ProcessBuffer, e.buffers), stderr: newRingBuffer(e.cfg.ProcessBuffer, e.buffers),
		terminate: make(chan struct{}), done: make(chan struct{}), stdinTurn: make(chan struct{}, 1)}
}

// startProcess runs r in the background as a process of sc, within its cap: a session's (MaxProcesses), or all
// stateless requests' together (StatelessProcesses).
func (e *Executor) startProcess(sc scope, r Request, openStdin bool) (*process, error) {
	if sc.stateless {
		return e.startStatelessProcess(r, openStdin)
	}
	ss := sc.ss
	t := e.procs
	t.mu.Lock()
	running := 0
	for _, p := range t.bySession[ss] {
		if p.running() {
			running++
		}
	}
	if running >= e.cfg.MaxProcesses {
		t.mu.Unlock()
		return nil, fmt.Errorf("this session already runs %d processes, the most it may (the executor's -max-processes); stop one with %s first",
			running, protocol.ToolStopProcess)
	}
	first := len(t.bySession[ss]) == 0
	t.seq++
	p := e.newProcess("p"+strconv.Itoa(t.seq), r)
	t.bySession[ss] = append(t.bySession[ss], p)
	t.forgetEnded(ss)
	t.mu.Unlock()
	if first && ss != nil {
		go func() {
			_ = ss.Wait() // the session ended: its processes end with it
			e.endSession(ss)
		}()
	}

	e.keepProcessStreams(sc, p)
	e.run(p, r, openStdin)
	return p, nil
}

// run starts p's command in the background.
func (e *Executor) run(p *process, r Request, openStdin bool) {
	ctx, kill := p.runCtx, p.kill
	r.Timeout = e.cfg.ProcessLifetime
	r.Stdout, r.Stderr, r.Terminate = p.stdout, p.stderr, p.terminate
	if openStdin {
		pr, pw := io.Pipe()
		p.stdin, p.stdinR, r.StdinStream = pw, pr, pr
	}
	go func() {
		defer close(p.done)
		defer kill()
		res, undone, err := e.runBackend(ctx, r)
		if len(undone) > 0 {
			_, _ = p.stderr.Write([]byte(protectedNote(undone)))
		}
		if p.stdinR != nil {
			p.stdinR.CloseWithError(errProcessEnded)
		}
		if err != nil {
			e.logger.Error("process could not run", "process", p.id, "error", err)
			_, _ = fmt.Fprintf(p.stderr, "\n[the process could not be run by the %s backend: %s]\n", e.backend.Name(), hideHostPaths(err.Error(), e.guard.Dir()))
			res = Result{ExitCode: -1}
		}
		p.closeKept()
		p.stdout.shrink()
		p.stderr.shrink()
		p.result, p.ended = res, time.Now()
		e.logger.Debug("process ended", "process", p.id, "exit_code", res.ExitCode, "timed_out", res.TimedOut)
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

// lookupProcess finds the process id for a call of sc: a stateless process by its handle, from any scope (the
// handle is the capability); else a process of sc's own session. Another session's process is not found, nor is a
// session's process id sent statelessly.
func (e *Executor) lookupProcess(sc scope, id string) (*process, error) {
	e.procs.mu.Lock()
	defer e.procs.mu.Unlock()
	if p := e.procs.byHandle[id]; p != nil {
		p.named = time.Now()
		return p, nil
	}
	if sc.stateless {
		return nil, fmt.Errorf("no process %q: a request without a session (MCP %s) reaches a process only by the process_id its %s returned "+
			"(a session's ids such as p1 mean nothing here); it may have been stopped, or forgotten after %v unread (%v once ended)",
			id, mcpserve.StatelessVersion, protocol.ToolStartProcess, e.cfg.StatelessIdleTimeout, e.cfg.StatelessUnusedTimeout)
	}
	for _, p := range e.procs.bySession[sc.ss] {
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
func (e *Executor) endSession(ss *mcp.ServerSession) {
	e.procs.mu.Lock()
	procs := e.procs.bySession[ss]
	delete(e.procs.bySession, ss)
	e.procs.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
	for _, p := range procs {
		<-p.done
		p.stdout.release()
		p.stderr.release()
	}
	if len(procs) > 0 {
		e.logger.Info("session ended: its processes were killed", "processes", len(procs))
	}
}

// Close kills every process of every session and of the stateless era. The server calls it at shutdown, before the
// backend closes.
func (e *Executor) Close() {
	e.procs.mu.Lock()
	sessions := make([]*mcp.ServerSession, 0, len(e.procs.bySession))
	for ss := range e.procs.bySession {
		sessions = append(sessions, ss)
	}
	if !e.procs.closed {
		e.procs.closed = true
		close(e.procs.stop)
	}
	stateless := e.procs.byHandle
	e.procs.byHandle = map[string]*process{}
	e.procs.mu.Unlock()
	for _, ss := range sessions {
		e.endSession(ss)
	}
	e.forget(stateless)
	e.outputs.close()
}

// listProcesses is a session's processes, oldest first; a stateless request's list is empty (scope.go).
func (e *Executor) listProcesses(sc scope) []*process {
	if sc.stateless {
		return nil
	}
	e.procs.mu.Lock()
	defer e.procs.mu.Unlock()
	procs := append([]*process(nil), e.procs.bySession[sc.ss]...)
	sort.SliceStable(procs, func(i, j int) bool { return procs[i].started.Before(procs[j].started) })
	return procs
}
