// Package processes is the executor's long-running processes: a command started in the background (a dev server, a
// watcher, a REPL) that later calls read, write to, stop and list. Each is an ordinary backend Run in a goroutine of
// its own — the same confinement, user, limits and totals as sandbox_run_command — with its output in ring buffers
// (ringbuf.go), its stdin an open pipe when asked for, and the backend's Terminate channel for a stop. A process
// belongs to the MCP session that started it: when the session ends (closed, expired, deleted, the server stopping),
// its processes are killed. A process a stateless request started (MCP 2026-07-28 over HTTP) belongs to no session:
// its process_id is a handle (stateless.go), and it ends when stopped, when no call has named it for the stateless
// idle timeout, or at shutdown. Below the process tools (package execserver), which call it, it knows nothing of
// them, and reaches the backend only through Settings.Run.
package processes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/outputs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// MaxReadBytes is the most of each stream one Read returns; the client reads on from the offsets it gets. It is
	// the run result's default output cap (16 KiB a stream): two streams, about 40 KB of JSON, a page every
	// coding-agent client passes its model whole (docs/clients.md).
	MaxReadBytes             = 16 << 10
	endedProcessesPerSession = 32 // ended processes a session keeps for reading, oldest forgotten first
)

// Process is one long-running process.
type Process struct {
	id, command string
	started     time.Time
	stdout      *ringBuffer
	stderr      *ringBuffer
	// stdoutKept and stderrKept keep each stream whole once it outgrows its ring buffer (outputs.go); nil when the
	// executor keeps no full outputs.
	stdoutKept, stderrKept *outputs.Stream

	stdinMu      sync.Mutex
	stdin        *io.PipeWriter // nil when closed
	stdinTurn    chan struct{}  // held (a value in it) by the write to stdin in progress, which may outlast its call
	stdinR       *io.PipeReader // closed when the process ends, so a write it will never read fails at once
	stdinTimeout time.Duration  // Settings.StdinWriteTimeout
	logger       *slog.Logger

	terminate     chan struct{}
	terminateOnce sync.Once
	runCtx        context.Context // the backend's Run's; kill ends it
	kill          context.CancelFunc

	done   chan struct{}  // closed when the backend's Run returned
	result backend.Result // valid once done
	ended  time.Time

	// named is when a call last named the process (started, read, written, stopped), for the stateless era's idle
	// expiry; guarded by Table.mu.
	named time.Time
	// client is the stateless client that started it, when clients can be told apart (stateless.go).
	client string

	// queued says the backend holds the process back until there is room under its total caps
	// (backend.HoldsBack): it has not started. told is closed once the backend said whether it waits.
	queued   atomic.Bool
	told     chan struct{}
	toldOnce sync.Once
}

// ID is the process's process_id: "p1" in a session, a handle without one (stateless.go).
func (p *Process) ID() string { return p.id }

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// reportedRunning is what a client is told: a process waiting for room has not started, so it does not run yet.
func (p *Process) reportedRunning() bool { return p.running() && !p.queued.Load() }

// Queued says the process waits for room under the backend's total caps and has not started.
func (p *Process) Queued() bool { return p.running() && p.queued.Load() }

// admissionWait bounds how long Start waits for a backend that holds processes back to say whether this one waits:
// it says so at once (a Docker Engine call or two), so the bound only matters when the Engine hangs.
const admissionWait = 10 * time.Second

// awaitAdmission waits until the backend said whether p waits for room, or p ended; the answer to the start then
// says the truth.
func (p *Process) awaitAdmission() {
	select {
	case <-p.told:
	case <-p.done:
	case <-time.After(admissionWait):
	}
}

func (p *Process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// exitCode is nil while the process runs.
func (p *Process) exitCode() *int {
	if p.running() {
		return nil
	}
	c := p.result.ExitCode
	return &c
}

func (p *Process) duration() time.Duration {
	if p.running() {
		return time.Since(p.started)
	}
	return p.ended.Sub(p.started)
}

// Info is the process as sandbox_list_processes shows it.
func (p *Process) Info() protocol.ProcessInfo {
	return protocol.ProcessInfo{ProcessID: p.id, Command: p.command, Running: p.reportedRunning(), Queued: p.Queued(),
		ExitCode: p.exitCode(), StartedAt: p.started.UTC().Format(time.RFC3339Nano), DurationMs: p.duration().Milliseconds()}
}

var errProcessEnded = errors.New("the process has ended")

// Settings are what every process is made with: the executor's Config, its defaults filled.
type Settings struct {
	Max int // processes one session may run at once (Config.MaxProcesses)
	// StatelessMax is how many processes the stateless era runs at once, all its clients together
	// (Config.StatelessProcesses); StatelessIdle and StatelessUnused forget a stateless process no call named for
	// that long, running or ended (Config.StatelessIdleTimeout, StatelessUnusedTimeout).
	StatelessMax                   int
	StatelessIdle, StatelessUnused time.Duration
	Lifetime                       time.Duration // a process running longer is killed (Config.ProcessLifetime)
	// HoldsBack: the backend may hold a process back until there is room under its total caps, and says so
	// (backend.HoldsBack, Request.Queued); the process is reported queued, not running, until it starts.
	HoldsBack         bool
	Buffer            int           // each stream's ring buffer (Config.ProcessBuffer)
	BufferTotal       int           // the ring buffers of all processes together (Config.ProcessBufferTotal)
	StdinWriteTimeout time.Duration // how long Write waits for a process to take its input
	Outputs           *outputs.Store
	// Run runs a process's request on the backend, as the executor runs its commands (with the protected paths'
	// sweep around it), and says on r.Stderr what the process's reader should know of how it went (a failure to
	// run, changes undone): the process's streams are its only report.
	Run    func(ctx context.Context, id string, r backend.Request) backend.Result
	Logger *slog.Logger
}

// Table is the executor's processes: a session's by session, a stateless request's by handle.
type Table struct {
	settings  Settings
	buffers   *bufferPool
	mu        sync.Mutex
	bySession map[*mcp.ServerSession][]*Process
	// seq counts each session's processes: its ids are p1, p2, ... whatever other sessions started, so an id tells
	// nothing of other sessions' work.
	seq      map[*mcp.ServerSession]int
	byHandle map[string]*Process // the stateless era's, by process_id
	reaping  sync.Once           // the stateless era's reaper, started with its first process
	stop     chan struct{}       // closed by EndAll: the reaper ends
	closed   bool
}

// New is an empty table.
func New(s Settings) *Table {
	return &Table{settings: s, buffers: newBufferPool(s.BufferTotal), bySession: map[*mcp.ServerSession][]*Process{},
		seq: map[*mcp.ServerSession]int{}, byHandle: map[string]*Process{}, stop: make(chan struct{})}
}

// BuffersInUse is how many bytes the ring buffers of all processes hold now, for the health report.
func (t *Table) BuffersInUse() int { return t.buffers.inUse() }

// newProcess is a process of r that has not started yet.
func (t *Table) newProcess(id string, r backend.Request) *Process {
	now := time.Now()
	// The kill exists before the process is in a table: a shutdown or expiry that finds it there may call it at once.
	ctx, kill := context.WithCancel(context.Background())
	return &Process{id: id, command: r.Command, started: now, named: now, runCtx: ctx, kill: kill,
		stdout: newRingBuffer(t.settings.Buffer, t.buffers), stderr: newRingBuffer(t.settings.Buffer, t.buffers),
		terminate: make(chan struct{}), done: make(chan struct{}), stdinTurn: make(chan struct{}, 1), told: make(chan struct{}),
		stdinTimeout: t.settings.StdinWriteTimeout, logger: t.settings.Logger}
}

// Start runs r in the background as a process of ow, within its cap: a session's (Max), or all stateless
// requests' together (StatelessMax).
func (t *Table) Start(ow outputs.Owner, r backend.Request, openStdin bool) (*Process, error) {
	if ow.Stateless {
		return t.startStateless(ow, r, openStdin)
	}
	ss := ow.Session
	t.mu.Lock()
	running := 0
	for _, p := range t.bySession[ss] {
		if p.running() {
			running++
		}
	}
	if running >= t.settings.Max {
		t.mu.Unlock()
		return nil, fmt.Errorf("this session already runs %d processes, the most it may (the executor's -max-processes); stop one with %s first",
			running, protocol.ToolStopProcess)
	}
	first := len(t.bySession[ss]) == 0
	t.seq[ss]++
	p := t.newProcess("p"+strconv.Itoa(t.seq[ss]), r)
	t.bySession[ss] = append(t.bySession[ss], p)
	t.forgetEnded(ss)
	t.mu.Unlock()
	if first && ss != nil {
		go func() {
			_ = ss.Wait() // the session ended: its processes end with it
			t.endSession(ss)
		}()
	}

	t.keepStreams(ow, p)
	t.launch(p, r, openStdin)
	return p, nil
}

// launch starts p's command in the background; with a backend that may hold it back, once that said whether it
// waits.
func (t *Table) launch(p *Process, r backend.Request, openStdin bool) {
	ctx, kill := p.runCtx, p.kill
	r.Timeout = t.settings.Lifetime
	r.Stdout, r.Stderr, r.Terminate = p.stdout, p.stderr, p.terminate
	if t.settings.HoldsBack {
		r.Queued = func(waiting bool) {
			p.queued.Store(waiting)
			p.toldOnce.Do(func() { close(p.told) })
		}
	}
	if openStdin {
		pr, pw := io.Pipe()
		p.stdin, p.stdinR, r.StdinStream = pw, pr, pr
	}
	go func() {
		defer close(p.done)
		defer kill()
		res := t.settings.Run(ctx, p.id, r)
		if p.stdinR != nil {
			p.stdinR.CloseWithError(errProcessEnded)
		}
		p.closeKept()
		p.stdout.shrink()
		p.stderr.shrink()
		p.result, p.ended = res, time.Now()
		t.settings.Logger.Debug("process ended", "process", p.id, "exit_code", res.ExitCode, "timed_out", res.TimedOut)
	}()
	if t.settings.HoldsBack {
		// The answer to the start says whether it runs or waits: the backend tells at once.
		p.awaitAdmission()
	}
}

// forgetEnded drops a session's oldest ended processes past endedProcessesPerSession (t.mu held).
func (t *Table) forgetEnded(ss *mcp.ServerSession) {
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

// Lookup finds the process id for a call of ow: a stateless process by its handle, from any owner (the handle is
// the capability); else a process of ow's own session. Another session's process is not found, nor is a session's
// process id sent statelessly.
func (t *Table) Lookup(ow outputs.Owner, id string) (*Process, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.byHandle[id]; p != nil {
		p.named = time.Now()
		return p, nil
	}
	if ow.Stateless {
		return nil, fmt.Errorf("no process %q: a request without a session (MCP %s) reaches a process only by the process_id its %s returned "+
			"(a session's ids such as p1 mean nothing here); it may have been stopped, or forgotten after %v unread (%v once ended)",
			id, mcpserve.StatelessVersion, protocol.ToolStartProcess, t.settings.StatelessIdle, t.settings.StatelessUnused)
	}
	for _, p := range t.bySession[ow.Session] {
		if p.id == id {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no process %q in this session: %s lists this session's processes (a process belongs to the session that started it)",
		id, protocol.ToolListProcesses)
}

// Read is what p printed from the offsets on, at most MaxReadBytes of each stream. When there is nothing new yet,
// it first waits up to wait for output or the exit. The content items are resource_links to p's streams kept whole.
func (p *Process) Read(ctx context.Context, stdoutOffset, stderrOffset int64, wait time.Duration) (protocol.ReadProcessOutputOutput, []mcp.Content) {
	if wait > 0 && p.running() && p.stdout.length() <= stdoutOffset && p.stderr.length() <= stderrOffset {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-p.stdout.wait():
		case <-p.stderr.wait():
		case <-p.done:
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	out := protocol.ReadProcessOutputOutput{ProcessID: p.id, Running: p.reportedRunning(), Queued: p.Queued(), ExitCode: p.exitCode()}
	stdout, next, dropped := p.stdout.readFrom(stdoutOffset, MaxReadBytes)
	out.Stdout, out.StdoutOffset, out.StdoutDropped = string(stdout), next, dropped
	stderr, next, dropped := p.stderr.readFrom(stderrOffset, MaxReadBytes)
	out.Stderr, out.StderrOffset, out.StderrDropped = string(stderr), next, dropped
	out.DurationMs = p.duration().Milliseconds()
	if !out.Running {
		out.NetworkDenied, out.Network = p.result.NetworkDenied, p.result.Network
		out.WorkspaceRefused = p.result.WorkspaceRefused
	}
	return p.withResources(out)
}

// Write writes data to p's stdin, and closes it after when closeAfter is set. A write blocks until the process reads
// (past a pipe's buffer); one that never reads must not hold the call, the session's requests or a server
// goroutine's caller for ever. The write itself runs in the background and holds the stdin's turn until the process
// takes it all or ends; the call waits for it Settings.StdinWriteTimeout.
func (p *Process) Write(ctx context.Context, data string, closeAfter bool) (protocol.WriteProcessInputOutput, error) {
	var out protocol.WriteProcessInputOutput
	timer := time.NewTimer(p.stdinTimeout)
	defer timer.Stop()
	select {
	case p.stdinTurn <- struct{}{}:
	case <-timer.C:
		return out, fmt.Errorf("an earlier write to the stdin of process %s is still waiting for the process to read it (%v and more): "+
			"read its output with %s, or end it with %s", p.id, p.stdinTimeout, protocol.ToolReadProcessOutput, protocol.ToolStopProcess)
	case <-ctx.Done():
		return out, context.Cause(ctx)
	}
	p.stdinMu.Lock()
	w := p.stdin
	p.stdinMu.Unlock()
	if w == nil {
		<-p.stdinTurn
		return out, fmt.Errorf("the stdin of process %s is closed: only a process started with stdin: \"open\" takes input, until it is closed", p.id)
	}
	var written atomic.Int64
	done := make(chan error, 1)
	go func() {
		defer func() { <-p.stdinTurn }()
		err := writeCounted(w, data, &written)
		if err == nil && closeAfter {
			p.stdinMu.Lock()
			if p.stdin == w {
				w.Close()
				p.stdin = nil
			}
			p.stdinMu.Unlock()
		}
		done <- err
	}()
	select {
	case err := <-done:
		out.BytesWritten = int(written.Load())
		if err != nil {
			return out, fmt.Errorf("wrote %d of %d bytes to process %s: %v", out.BytesWritten, len(data), p.id, err)
		}
		return out, nil
	case <-timer.C:
		n := written.Load()
		p.logger.Info("process does not read its stdin", "process", p.id, "written", n, "of", len(data))
		then := "the rest is written as it reads"
		if closeAfter {
			then += ", and its stdin closed after it"
		}
		return out, fmt.Errorf("process %s did not read its input within %v: %d of %d bytes taken so far; %s (a later write waits "+
			"for this one). Is it reading its stdin? Read its output with %s, or end it with %s", p.id, p.stdinTimeout, n,
			len(data), then, protocol.ToolReadProcessOutput, protocol.ToolStopProcess)
	case <-ctx.Done():
		return out, context.Cause(ctx)
	}
}

// stdinChunk is how much of a write goes to a process's stdin at a time, so that a write the process stops taking
// can say how much it took.
const stdinChunk = 4 << 10

// writeCounted writes data to w in chunks, counting in n what w took.
func writeCounted(w io.Writer, data string, n *atomic.Int64) error {
	for len(data) > 0 {
		c := data[:min(len(data), stdinChunk)]
		k, err := io.WriteString(w, c)
		n.Add(int64(k))
		if err != nil {
			return err
		}
		data = data[len(c):]
	}
	return nil
}

// Stop sends SIGTERM to p's whole tree, waits up to grace for it to end, then kills it; Killed says it had to (or,
// for a process that had ended, that it was killed).
func (p *Process) Stop(grace time.Duration) protocol.StopProcessOutput {
	var killed bool
	select {
	case <-p.done:
		killed = p.result.ExitCode == -1
	default:
		p.terminateOnce.Do(func() { close(p.terminate) })
		select {
		case <-p.done:
		case <-time.After(grace):
			p.kill()
			<-p.done
			killed = true
		}
	}
	return protocol.StopProcessOutput{ProcessID: p.id, ExitCode: p.result.ExitCode, Killed: killed,
		NetworkDenied: p.result.NetworkDenied, Network: p.result.Network, WorkspaceRefused: p.result.WorkspaceRefused}
}

// endSession kills every process of a session that ended, and forgets them.
func (t *Table) endSession(ss *mcp.ServerSession) {
	t.mu.Lock()
	procs := t.bySession[ss]
	delete(t.bySession, ss)
	delete(t.seq, ss)
	t.mu.Unlock()
	t.forget(procs)
	if len(procs) > 0 {
		t.settings.Logger.Info("session ended: its processes were killed", "processes", len(procs))
	}
}

// EndAll kills every process of every session and of the stateless era, and stops the stateless reaper.
func (t *Table) EndAll() {
	t.mu.Lock()
	sessions := make([]*mcp.ServerSession, 0, len(t.bySession))
	for ss := range t.bySession {
		sessions = append(sessions, ss)
	}
	if !t.closed {
		t.closed = true
		close(t.stop)
	}
	stateless := slices.Collect(maps.Values(t.byHandle))
	t.byHandle = map[string]*Process{}
	t.mu.Unlock()
	for _, ss := range sessions {
		t.endSession(ss)
	}
	t.forget(stateless)
}

// List is a session's processes, oldest first; a stateless request's list is empty (stateless.go).
func (t *Table) List(ow outputs.Owner) []*Process {
	if ow.Stateless {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	procs := append([]*Process(nil), t.bySession[ow.Session]...)
	sort.SliceStable(procs, func(i, j int) bool { return procs[i].started.Before(procs[j].started) })
	return procs
}
