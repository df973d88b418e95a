package execserver

// The process tools: sandbox_start_process, sandbox_read_process_output, sandbox_write_process_input,
// sandbox_stop_process, sandbox_list_processes (process.go holds the processes themselves), and Close, which ends
// them all.

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Close kills every process of every session and of the stateless era, and frees the stateless era's outputs (a
// session's end with it). The server calls it at shutdown, before the backend closes.
func (e *Executor) Close() {
	e.procs.endAll()
	e.outputs.Close()
}

func (e *Executor) addProcessTools() {
	whole := ""
	if e.outputs.Keeps() {
		whole = " Once a stream outgrows its buffer, the whole stream from its first byte stays readable as the resource stdout_resource or " +
			"stderr_resource names (resources/read, in pages, at the same offsets), for this session, while its budget for full outputs lasts."
	}
	mcpserve.AddTool(e.server, e.logger, &mcp.Tool{
		Name: protocol.ToolStartProcess,
		Description: fmt.Sprintf("Start a shell command (sh -c) in the background, for a dev server, a watcher or a REPL: it runs confined exactly as "+
			"%s does and shares the sandbox's loopback with later commands (a server started here answers curl 127.0.0.1:PORT from %s). "+
			"Read its output with %s, write to its stdin (stdin: \"open\") with %s, stop it with %s. It belongs to this session: it is killed "+
			"when the session ends, and after %v at the latest. At most %d run at once per session. Without a session (MCP %s) process_id is "+
			"an unguessable handle, the only way to the process: keep it; a process no call names for %v is killed, and at most %d run at once "+
			"for all such clients together.",
			protocol.ToolRunCommand, protocol.ToolRunCommand, protocol.ToolReadProcessOutput, protocol.ToolWriteProcessInput, protocol.ToolStopProcess,
			e.cfg.ProcessLifetime, e.cfg.MaxProcesses, mcpserve.StatelessVersion, e.cfg.StatelessIdleTimeout, e.cfg.StatelessProcesses),
		Annotations: mcpserve.Annotations(mcpserve.Hints{Title: "Start a background process", Destructive: true}),
	}, e.startProcessTool)
	mcpserve.AddTool(e.server, e.logger, &mcp.Tool{
		Name: protocol.ToolReadProcessOutput,
		Description: fmt.Sprintf("What a process printed since the given byte offsets (counted from its start), at most %d bytes of each stream "+
			"per call: read on from the offsets returned. wait_seconds (at most %d) waits for new output or the exit. Each stream keeps its last "+
			"%d bytes; *_dropped says how many bytes after the offset asked for were no longer held. exit_code is null while it runs.%s",
			maxProcessReadBytes, int(maxProcessWait.Seconds()), e.cfg.ProcessBuffer, whole),
		Annotations: mcpserve.Annotations(mcpserve.Hints{Title: "Read a process's output", ReadOnly: true, Idempotent: true}),
	}, e.readProcessTool)
	mcpserve.AddTool(e.server, e.logger, &mcp.Tool{
		Name: protocol.ToolWriteProcessInput,
		Description: fmt.Sprintf("Write text to the stdin of a process started with stdin: \"open\"; close: true closes it afterwards (the process "+
			"sees EOF). If the process has not taken it all within %v (it is not reading), the call returns an error saying how much it took; "+
			"the rest is written as it reads.", e.cfg.StdinWriteTimeout),
		Annotations: mcpserve.Annotations(mcpserve.Hints{Title: "Write to a process's stdin"}),
	}, e.writeProcessTool)
	mcpserve.AddTool(e.server, e.logger, &mcp.Tool{
		Name: protocol.ToolStopProcess,
		Description: fmt.Sprintf("Stop a process: SIGTERM to every process of its tree, then SIGKILL after grace_seconds (default %d, at most %d). "+
			"Returns its exit code; killed says SIGKILL was needed.", int(defaultStopGrace.Seconds()), int(maxStopGrace.Seconds())),
		Annotations: mcpserve.Annotations(mcpserve.Hints{Title: "Stop a process", Destructive: true, Idempotent: true}),
	}, e.stopProcessTool)
	mcpserve.AddTool(e.server, e.logger, &mcp.Tool{
		Name: protocol.ToolListProcesses,
		Description: fmt.Sprintf("This session's processes, running and ended, oldest first. A request without a session (MCP %s) lists none: "+
			"no client may list another's, so keep the process_id %s returned.", mcpserve.StatelessVersion, protocol.ToolStartProcess),
		Annotations: mcpserve.Annotations(mcpserve.Hints{Title: "List processes", ReadOnly: true, Idempotent: true}),
	}, e.listProcessesTool)
}

func (e *Executor) startProcessTool(ctx context.Context, req *mcp.CallToolRequest, in protocol.StartProcessInput) (protocol.StartProcessOutput, error) {
	var out protocol.StartProcessOutput
	if in.Stdin != "" && in.Stdin != "open" && in.Stdin != "closed" {
		return out, fmt.Errorf("stdin %q: give \"open\" (write to it with %s) or \"closed\" (the default: the process sees EOF at once)",
			in.Stdin, protocol.ToolWriteProcessInput)
	}
	r, err := e.check(protocol.RunCommandInput{Command: in.Command, Cwd: in.Cwd})
	if err != nil {
		return out, err
	}
	p, err := e.procs.start(scopeOf(ctx, req.Session), r, in.Stdin == "open")
	if err != nil {
		return out, err
	}
	// While it runs, its session is not closed to make room for new ones (mcpserve's session cap): a flood of
	// sessions must not kill another client's dev server.
	release := mcpserve.HoldSession(ctx)
	go func() { <-p.done; release() }()
	e.logger.Info("process started", "process", p.id, "command", clipForLog(in.Command))
	return protocol.StartProcessOutput{ProcessID: p.id, StartedAt: p.started.UTC().Format(time.RFC3339Nano)}, nil
}

func (e *Executor) readProcessTool(ctx context.Context, req *mcp.CallToolRequest, in protocol.ReadProcessOutputInput) (readProcessResult, error) {
	var out readProcessResult
	wait := time.Duration(in.WaitSeconds) * time.Second
	switch {
	case in.WaitSeconds < 0 || wait > maxProcessWait:
		return out, fmt.Errorf("wait_seconds %d is out of range: give 0 to %d", in.WaitSeconds, int(maxProcessWait.Seconds()))
	case in.StdoutOffset < 0 || in.StderrOffset < 0:
		return out, fmt.Errorf("offsets count bytes from the process's start: give 0 or more (the offsets a read returned)")
	}
	p, err := e.procs.lookup(scopeOf(ctx, req.Session), in.ProcessID)
	if err != nil {
		return out, err
	}
	if wait > 0 && p.running() && p.stdout.length() <= in.StdoutOffset && p.stderr.length() <= in.StderrOffset {
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
	out.ProcessID, out.Running, out.ExitCode = p.id, p.running(), p.exitCode()
	stdout, next, dropped := p.stdout.readFrom(in.StdoutOffset, maxProcessReadBytes)
	out.Stdout, out.StdoutOffset, out.StdoutDropped = string(stdout), next, dropped
	stderr, next, dropped := p.stderr.readFrom(in.StderrOffset, maxProcessReadBytes)
	out.Stderr, out.StderrOffset, out.StderrDropped = string(stderr), next, dropped
	out.DurationMs = p.duration().Milliseconds()
	if !out.Running {
		out.NetworkDenied, out.Network = p.result.NetworkDenied, p.result.Network
	}
	res := p.withResources(out.ReadProcessOutputOutput)
	if !e.cfg.ResourceLinks {
		res.links = nil
	}
	return res, nil
}

func (e *Executor) writeProcessTool(ctx context.Context, req *mcp.CallToolRequest, in protocol.WriteProcessInputInput) (protocol.WriteProcessInputOutput, error) {
	var out protocol.WriteProcessInputOutput
	p, err := e.procs.lookup(scopeOf(ctx, req.Session), in.ProcessID)
	if err != nil {
		return out, err
	}
	// A write blocks until the process reads (past a pipe's buffer); one that never reads must not hold the call,
	// the session's requests or a server goroutine's caller for ever. The write itself runs in the background and
	// holds the stdin's turn until the process takes it all or ends; the call waits for it StdinWriteTimeout.
	timer := time.NewTimer(e.cfg.StdinWriteTimeout)
	defer timer.Stop()
	select {
	case p.stdinTurn <- struct{}{}:
	case <-timer.C:
		return out, fmt.Errorf("an earlier write to the stdin of process %s is still waiting for the process to read it (%v and more): "+
			"read its output with %s, or end it with %s", p.id, e.cfg.StdinWriteTimeout, protocol.ToolReadProcessOutput, protocol.ToolStopProcess)
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
		err := writeCounted(w, in.Data, &written)
		if err == nil && in.Close {
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
			return out, fmt.Errorf("wrote %d of %d bytes to process %s: %v", out.BytesWritten, len(in.Data), p.id, err)
		}
		return out, nil
	case <-timer.C:
		n := written.Load()
		e.logger.Info("process does not read its stdin", "process", p.id, "written", n, "of", len(in.Data))
		then := "the rest is written as it reads"
		if in.Close {
			then += ", and its stdin closed after it"
		}
		return out, fmt.Errorf("process %s did not read its input within %v: %d of %d bytes taken so far; %s (a later write waits "+
			"for this one). Is it reading its stdin? Read its output with %s, or end it with %s", p.id, e.cfg.StdinWriteTimeout, n,
			len(in.Data), then, protocol.ToolReadProcessOutput, protocol.ToolStopProcess)
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

func (e *Executor) stopProcessTool(ctx context.Context, req *mcp.CallToolRequest, in protocol.StopProcessInput) (protocol.StopProcessOutput, error) {
	var out protocol.StopProcessOutput
	grace := defaultStopGrace
	if in.GraceSeconds != nil {
		grace = time.Duration(*in.GraceSeconds) * time.Second
		if *in.GraceSeconds < 0 || grace > maxStopGrace {
			return out, fmt.Errorf("grace_seconds %d is out of range: give 0 to %d, or leave it out for %d", *in.GraceSeconds,
				int(maxStopGrace.Seconds()), int(defaultStopGrace.Seconds()))
		}
	}
	p, err := e.procs.lookup(scopeOf(ctx, req.Session), in.ProcessID)
	if err != nil {
		return out, err
	}
	killed := p.stop(grace)
	e.logger.Info("process stopped", "process", p.id, "exit_code", p.result.ExitCode, "killed", killed)
	return protocol.StopProcessOutput{ProcessID: p.id, ExitCode: p.result.ExitCode, Killed: killed,
		NetworkDenied: p.result.NetworkDenied, Network: p.result.Network}, nil
}

func (e *Executor) listProcessesTool(ctx context.Context, req *mcp.CallToolRequest, in protocol.ListProcessesInput) (protocol.ListProcessesOutput, error) {
	out := protocol.ListProcessesOutput{Processes: []protocol.ProcessInfo{}}
	for _, p := range e.procs.list(scopeOf(ctx, req.Session)) {
		out.Processes = append(out.Processes, protocol.ProcessInfo{ProcessID: p.id, Command: p.command, Running: p.running(),
			ExitCode: p.exitCode(), StartedAt: p.started.UTC().Format(time.RFC3339Nano), DurationMs: p.duration().Milliseconds()})
	}
	return out, nil
}

// clipForLog keeps a log line short.
func clipForLog(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
