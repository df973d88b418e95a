package execserver

// The process tools: sandbox_start_process, sandbox_read_process_output, sandbox_write_process_input,
// sandbox_stop_process, sandbox_list_processes (package processes holds the processes themselves), and Close, which
// ends them all.

import (
	"context"
	"fmt"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/processes"
	"github.com/goalbox/goalbox/servers/executor/execserver/wsguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults for the process settings of Config, and the bounds of the process tools' arguments.
const (
	DefaultMaxProcesses    = 8
	DefaultProcessLifetime = time.Hour
	DefaultProcessBuffer   = 1 << 20
	// DefaultProcessBufferTotal bounds the ring buffers of all processes of all sessions together: 256 MiB, the
	// full buffers of 128 chatty processes (at -max-sessions 256 × -max-processes 8 that is an eighth of them).
	DefaultProcessBufferTotal = 256 << 20
	// DefaultStdinWriteTimeout: a process reading its input takes 64 KiB (a pipe's buffer) at once; one that has
	// not taken it in ten seconds is not reading.
	DefaultStdinWriteTimeout = 10 * time.Second
	// DefaultStatelessProcessesPerMax: the stateless era may run 8 times a session's -max-processes (64 by
	// default) at once: with 1 MiB buffers per stream, at most half the default 256 MiB buffer total.
	DefaultStatelessProcessesPerMax = 8
	defaultStopGrace                = 5 * time.Second
	maxStopGrace                    = 60 * time.Second
	maxProcessWait                  = 30 * time.Second
)

// Close kills every process of every session and of the stateless era, and frees the stateless era's outputs (a
// session's end with it). The server calls it at shutdown, before the backend closes.
func (e *Executor) Close() {
	e.procs.EndAll()
	e.outputs.Close()
}

func (e *Executor) addProcessTools() {
	whole := ""
	if e.outputs.Keeps() {
		whole = " Once a stream outgrows its buffer, the whole stream from its first byte stays readable as the resource stdout_resource or " +
			"stderr_resource names (resources/read, or the tool " + protocol.ToolReadOutput + ", in pages, at the same offsets), for this session, while its budget for full outputs lasts."
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
			processes.MaxReadBytes, int(maxProcessWait.Seconds()), e.cfg.ProcessBuffer, whole),
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
	p, err := e.procs.Start(ownerOf(ctx, req.Session), r, in.Stdin == "open")
	if err != nil {
		return out, err
	}
	// While it runs, its session is not closed to make room for new ones (mcpserve's session cap): a flood of
	// sessions must not kill another client's dev server.
	release := mcpserve.HoldSession(ctx)
	go func() { <-p.Done(); release() }()
	e.logger.Info("process started", "process", p.ID(), "command", clipForLog(in.Command))
	return protocol.StartProcessOutput{ProcessID: p.ID(), StartedAt: p.Info().StartedAt, Queued: p.Queued()}, nil
}

// runProcess runs a process's request (processes.Settings.Run): what the sweep undid, and a failure to run, are
// told at the end of its stderr, as a command's are in its result.
func (e *Executor) runProcess(ctx context.Context, id string, r backend.Request) backend.Result {
	res, undone, err := e.run.run(ctx, r)
	if len(undone.undone) > 0 {
		_, _ = r.Stderr.Write([]byte(protectedNote(undone)))
	}
	if len(res.WorkspaceRefused) > 0 {
		_, _ = r.Stderr.Write([]byte(wsguard.Note(res.WorkspaceRefused)))
	}
	if err != nil {
		e.logger.Error("process could not run", "process", id, "error", err)
		_, _ = fmt.Fprintf(r.Stderr, "\n[the process %s]\n", e.run.failure(err))
		res = backend.Result{ExitCode: -1}
	}
	return res
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
	p, err := e.procs.Lookup(ownerOf(ctx, req.Session), in.ProcessID)
	if err != nil {
		return out, err
	}
	out.ReadProcessOutputOutput, out.links = p.Read(ctx, in.StdoutOffset, in.StderrOffset, wait)
	if !e.cfg.ResourceLinks {
		out.links = nil
	}
	return out, nil
}

// readProcessResult is sandbox_read_process_output's result: the contract's fields, and a resource_link content
// item for each stream kept whole.
type readProcessResult struct {
	protocol.ReadProcessOutputOutput
	links []mcp.Content
}

// MoreContent implements mcpserve.MoreContent.
func (r readProcessResult) MoreContent() []mcp.Content { return r.links }

// LongFields implements mcpserve.LongFields: the streams go last in the result's text.
func (r readProcessResult) LongFields() []string { return streamFields }

func (e *Executor) writeProcessTool(ctx context.Context, req *mcp.CallToolRequest, in protocol.WriteProcessInputInput) (protocol.WriteProcessInputOutput, error) {
	p, err := e.procs.Lookup(ownerOf(ctx, req.Session), in.ProcessID)
	if err != nil {
		return protocol.WriteProcessInputOutput{}, err
	}
	return p.Write(ctx, in.Data, in.Close)
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
	p, err := e.procs.Lookup(ownerOf(ctx, req.Session), in.ProcessID)
	if err != nil {
		return out, err
	}
	out = p.Stop(grace)
	e.logger.Info("process stopped", "process", out.ProcessID, "exit_code", out.ExitCode, "killed", out.Killed)
	return out, nil
}

func (e *Executor) listProcessesTool(ctx context.Context, req *mcp.CallToolRequest, in protocol.ListProcessesInput) (protocol.ListProcessesOutput, error) {
	out := protocol.ListProcessesOutput{Processes: []protocol.ProcessInfo{}}
	for _, p := range e.procs.List(ownerOf(ctx, req.Session)) {
		out.Processes = append(out.Processes, p.Info())
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
