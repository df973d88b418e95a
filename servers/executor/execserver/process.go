package execserver

// Long-running processes: a command started in the background (a dev server, a watcher, a REPL) that later calls
// read, write to, stop and list. Each is an ordinary backend Run in a goroutine of its own — the same confinement,
// user, limits and totals as sandbox_run_command — with its output in ring buffers, its stdin an open pipe when
// asked for, and the backend's Terminate channel for a stop. A process belongs to the MCP session that started it:
// when the session ends (closed, expired, deleted, the server stopping), its processes are killed.

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

	"github.com/goalbox/goalbox/pkg/protocol"
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
	// stdoutKept and stderrKept keep each stream whole once it outgrows its ring buffer (outputs_process.go);
	// nil when the executor keeps no full outputs.
	stdoutKept, stderrKept *outputs.Stream

	stdinMu   sync.Mutex
	stdin     *io.PipeWriter // nil when closed
	stdinTurn chan struct{}  // held (a value in it) by the write to stdin in progress, which may outlast its call
	stdinR    *io.PipeReader // closed when the process ends, so a write it will never read fails at once

	terminate     chan struct{}
	terminateOnce sync.Once
	kill          context.CancelFunc

	done   chan struct{} // closed when the backend's Run returned
	result Result        // valid once done
	ended  time.Time
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
	max      int           // processes one session may run at once (Config.MaxProcesses)
	lifetime time.Duration // a process running longer is killed (Config.ProcessLifetime)
	buffer   int           // each stream's ring buffer (Config.ProcessBuffer)
	buffers  *bufferPool   // the ring buffers of all processes together
	outputs  *outputs.Store
	run      runner
	logger   *slog.Logger
}

// processTable is the executor's processes, by session. It is below the process tools (process_tools.go), which
// call it, and knows nothing of them.
type processTable struct {
	processSettings
	mu        sync.Mutex
	bySession map[*mcp.ServerSession][]*process
	seq       int
}

func newProcessTable(s processSettings) *processTable {
	return &processTable{processSettings: s, bySession: map[*mcp.ServerSession][]*process{}}
}

// start runs r in the background as a process of session ss, within the session's cap.
func (t *processTable) start(ss *mcp.ServerSession, r Request, openStdin bool) (*process, error) {
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
	p := &process{id: "p" + strconv.Itoa(t.seq), command: r.Command, started: time.Now(),
		stdout: newRingBuffer(t.buffer, t.buffers), stderr: newRingBuffer(t.buffer, t.buffers),
		terminate: make(chan struct{}), done: make(chan struct{}), stdinTurn: make(chan struct{}, 1)}
	t.bySession[ss] = append(t.bySession[ss], p)
	t.forgetEnded(ss)
	t.mu.Unlock()
	if first && ss != nil {
		go func() {
			_ = ss.Wait() // the session ended: its processes end with it
			t.endSession(ss)
		}()
	}

	t.keepStreams(ss, p)

	ctx, kill := context.WithCancel(context.Background())
	p.kill = kill
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
			res = Result{ExitCode: -1}
		}
		p.closeKept()
		p.stdout.shrink()
		p.stderr.shrink()
		p.result, p.ended = res, time.Now()
		t.logger.Debug("process ended", "process", p.id, "exit_code", res.ExitCode, "timed_out", res.TimedOut)
	}()
	return p, nil
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

// lookup finds a process of session ss; another session's process is not found.
func (t *processTable) lookup(ss *mcp.ServerSession, id string) (*process, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.bySession[ss] {
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

// endAll kills every process of every session.
func (t *processTable) endAll() {
	t.mu.Lock()
	sessions := make([]*mcp.ServerSession, 0, len(t.bySession))
	for ss := range t.bySession {
		sessions = append(sessions, ss)
	}
	t.mu.Unlock()
	for _, ss := range sessions {
		t.endSession(ss)
	}
}

// list is a session's processes, oldest first.
func (t *processTable) list(ss *mcp.ServerSession) []*process {
	t.mu.Lock()
	defer t.mu.Unlock()
	procs := append([]*process(nil), t.bySession[ss]...)
	sort.SliceStable(procs, func(i, j int) bool { return procs[i].started.Before(procs[j].started) })
	return procs
}
