// Package execserver is the executor MCP server: sandbox_run_command, which runs a shell command confined to the
// workspace on a pluggable backend, and the five process tools (sandbox_start_process, sandbox_read_process_output,
// sandbox_write_process_input, sandbox_stop_process, sandbox_list_processes). It owns the tools (server.go,
// process_tools.go, run_outputs.go), the command policy (policy.go), the capped output (output.go), the runner
// (runner.go) and the protected files' sweep (protect.go). Below it, and knowing nothing of it, are the background
// processes (package execserver/processes), the full outputs kept as resources (execserver/outputs) and the contract
// every backend meets (execserver/backend: Backend, Request, Result). It imports no backend: the local one is package
// execserver/local, the Docker one execserver/docker, and execserver/backends picks one for the command
// (servers/executor) and the agent alike; none of them imports execserver.
package execserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/outputs"
	"github.com/goalbox/goalbox/servers/executor/execserver/processes"
	"github.com/goalbox/goalbox/servers/executor/execserver/wsguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the server's name in MCP and in logs.
const Name = "goalbox-executor"

// Defaults for Config.
const (
	DefaultTimeout    = 120 * time.Second
	DefaultMaxTimeout = 30 * time.Minute
	// maxCommandBytes is Linux's limit on one exec argument (MAX_ARG_STRLEN, 128 KiB), less the terminating NUL:
	// sh -c gets the command as one argument.
	maxCommandBytes = 128<<10 - 1
	// progressEvery is how often a running command reports progress to a client that asked for it.
	progressEvery = time.Second
)

// Config is the executor's own configuration, besides what mcpserve.Config holds. The tags are the executor
// command's flags and environment variables (package envflag), which bind to these fields in place; the defaults
// are fill's, the one place they are set.
type Config struct {
	// DefaultTimeout applies when a call gives no timeout_seconds.
	DefaultTimeout time.Duration `env:"TIMEOUT_DEFAULT" flag:"timeout-default" usage:"timeout of a command that gives none (default 2m)"`
	// MaxTimeout is the largest timeout_seconds a call may ask for.
	MaxTimeout time.Duration `env:"TIMEOUT_MAX" flag:"timeout-max" usage:"largest timeout a command may ask for (default 30m, or -timeout-default when that is longer)"`
	// OutputCap is the most bytes kept of each of stdout and stderr (head and tail); at most MaxOutputCap.
	OutputCap int `env:"OUTPUT_CAP" flag:"output-cap" usage:"bytes kept of each of stdout and stderr, head and tail, at most 1 MiB (default 16 KiB: what coding agents keep of a result, docs/clients.md)"`
	// Policy, when set, refuses commands before they run.
	Policy *Policy
	// MaxConcurrent is how many commands may run at once; a call past it waits for a free slot, within its own
	// timeout. 0 means DefaultMaxConcurrent. Processes do not count: they have caps of their own.
	MaxConcurrent int `env:"MAX_CONCURRENT" flag:"max-concurrent" usage:"commands run at once; a call past it waits for a free slot within its own timeout, then is refused (default 2 per CPU, at least 4)"`
	// MaxProcesses is how many processes one session may run at once; 0 means DefaultMaxProcesses.
	MaxProcesses int `env:"MAX_PROCESSES" flag:"max-processes" usage:"background processes (sandbox_start_process) one session may run at once (default 8)"`
	// StatelessProcesses is how many processes requests without a session (MCP 2026-07-28 over HTTP) may run at
	// once, all together (package processes); 0 means DefaultStatelessProcessesPerMax times MaxProcesses.
	StatelessProcesses int `env:"STATELESS_PROCESSES" flag:"stateless-processes" usage:"background processes requests without a session (MCP 2026-07-28 over HTTP) may run at once, all together (default 8 times -max-processes)"`
	// StatelessIdleTimeout kills and forgets a stateless process, and drops a stateless kept output, that no call
	// has named for this long; 0 means mcpserve.DefaultSessionIdleTimeout, a session's idle timeout.
	StatelessIdleTimeout time.Duration `env:"STATELESS_IDLE_TIMEOUT" flag:"stateless-idle-timeout" usage:"a process or kept output made without a session that no call names for this long is killed or dropped (default 30m)"`
	// StatelessUnusedTimeout forgets an ended stateless process unread for this long; 0 means
	// mcpserve.DefaultSessionUnusedTimeout, the timeout of a session that runs nothing.
	StatelessUnusedTimeout time.Duration `env:"STATELESS_UNUSED_TIMEOUT" flag:"stateless-unused-timeout" usage:"an ended process made without a session, unread this long, is forgotten (default 5m)"`
	// ProcessLifetime kills a process that runs longer; 0 means DefaultProcessLifetime.
	ProcessLifetime time.Duration `env:"PROCESS_LIFETIME" flag:"process-lifetime" usage:"a background process running longer is killed (default 1h)"`
	// StdinWriteTimeout bounds how long sandbox_write_process_input waits for a process to take its input (one that
	// never reads its stdin); 0 means DefaultStdinWriteTimeout.
	StdinWriteTimeout time.Duration
	// ProcessBuffer is the bytes of each stream of a process kept for reading (a ring: the oldest are dropped and
	// counted); 0 means DefaultProcessBuffer.
	ProcessBuffer int
	// ProcessBufferTotal is the bytes all processes' ring buffers may hold together; a buffer grows with its
	// stream's output and, once the total is spent, wraps within what it has. 0 means DefaultProcessBufferTotal.
	ProcessBufferTotal int `env:"PROCESS_BUFFER_TOTAL" flag:"process-buffer-total" usage:"bytes all background processes' output buffers hold together, whatever the number of sessions; each grows with its output up to 1 MiB a stream (default 256 MiB)"`
	// OutputBudget is how many bytes of full outputs (streams past OutputCap) each session keeps, oldest evicted
	// first. 0 means DefaultOutputBudget, -1 keeps none.
	OutputBudget int64 `env:"OUTPUT_BUDGET" flag:"output-budget" usage:"bytes of full outputs (streams past -output-cap, served as MCP resources) each session keeps, oldest evicted first; at least 2 MiB, -1 keeps none (default 64 MiB)"`
	// OutputTotal is how many bytes of full outputs all sessions together keep; a session that needs room while it
	// is full evicts its own oldest. 0 means DefaultOutputTotal (or OutputBudget, when that is larger).
	OutputTotal int64 `env:"OUTPUT_TOTAL" flag:"output-total" usage:"bytes of full outputs all sessions together keep (a session needing room evicts its own oldest); at least -output-budget (default 512 MiB)"`
	// BackendChoice, BackendRule and BackendReason say how the backend was chosen and why (package backends'
	// Choice), for the health report: "auto" or "explicit", the step that chose it, and a sentence for people.
	BackendChoice, BackendReason string
	BackendRule                  protocol.BackendRule
	// Protection is the protected project paths commands may not change (protect.go); nil means
	// pathguard.DefaultProtected.
	Protection *pathguard.Protection
	// ResourceLinks adds a resource_link content item for each stream kept whole, after the JSON text. Off by
	// default: the URI is in the result's stdout_resource and stderr_resource either way, and some client
	// libraries carry a resource_link to the model badly (LangChain's adapters turn it into a file block that
	// ChatOpenAI and ChatAnthropic refuse to send; the OpenAI Agents SDK sends a many-item content as one escaped
	// JSON string). With one text item every common library gives the model the same JSON.
	ResourceLinks bool `env:"RESOURCE_LINKS" flag:"resource-links" usage:"add a resource_link content item for each stream kept whole (the URI is in stdout_resource/stderr_resource either way; some client libraries pass resource links to models badly)"`
	// QuarantineDir is where a sweep keeps what it took out of the workspace; "" means a folder of the server's
	// user per workspace (~/.cache/goalbox-exec/quarantine/..., /var/cache/goalbox-exec/quarantine/... for root).
	QuarantineDir string `env:"QUARANTINE_DIR" flag:"quarantine-dir" usage:"folder, outside the workspace, where protected project files a command created or changed are kept after they are undone; default ~/.cache/goalbox-exec/quarantine (root: /var/cache/goalbox-exec/quarantine)"`
	// ProtectScanEntries is how many entries the sweep's cached scan reads (its cache holds each folder's names)
	// before it walks the workspace whole without a cache; 0 means pathguard.DefaultMaxTreeEntries. It bounds the
	// cache's memory, never what is protected: tests lower it to reach the uncached walk with a small filler.
	ProtectScanEntries int
}

// DefaultMaxConcurrent is how many commands an executor runs at once unless told otherwise: enough for an agent's
// parallel tool calls and a test runner beside a dev server, few enough that the machine's cores are not buried.
var DefaultMaxConcurrent = max(4, 2*runtime.NumCPU())

func (c *Config) fill() error {
	if c.Protection == nil {
		p, err := pathguard.NewProtection(nil, nil)
		if err != nil {
			return err
		}
		c.Protection = p
	}
	c.DefaultTimeout = cmp.Or(c.DefaultTimeout, DefaultTimeout)
	c.MaxTimeout = cmp.Or(c.MaxTimeout, max(DefaultMaxTimeout, c.DefaultTimeout))
	c.OutputCap = cmp.Or(c.OutputCap, DefaultOutputCap)
	c.MaxConcurrent = cmp.Or(c.MaxConcurrent, DefaultMaxConcurrent)
	c.MaxProcesses = cmp.Or(c.MaxProcesses, DefaultMaxProcesses)
	c.StatelessProcesses = cmp.Or(c.StatelessProcesses, DefaultStatelessProcessesPerMax*c.MaxProcesses)
	c.StatelessIdleTimeout = cmp.Or(c.StatelessIdleTimeout, mcpserve.DefaultSessionIdleTimeout)
	c.StatelessUnusedTimeout = cmp.Or(c.StatelessUnusedTimeout, mcpserve.DefaultSessionUnusedTimeout)
	c.ProcessLifetime = cmp.Or(c.ProcessLifetime, DefaultProcessLifetime)
	c.StdinWriteTimeout = cmp.Or(c.StdinWriteTimeout, DefaultStdinWriteTimeout)
	c.ProcessBuffer = cmp.Or(c.ProcessBuffer, DefaultProcessBuffer)
	c.ProcessBufferTotal = cmp.Or(c.ProcessBufferTotal, max(DefaultProcessBufferTotal, 2*c.ProcessBuffer))
	c.OutputBudget = cmp.Or(c.OutputBudget, DefaultOutputBudget)
	c.OutputTotal = cmp.Or(c.OutputTotal, max(DefaultOutputTotal, c.OutputBudget))
	switch {
	case c.DefaultTimeout < time.Second || c.DefaultTimeout%time.Second != 0:
		return fmt.Errorf("default timeout %v: must be a whole number of seconds, at least 1s", c.DefaultTimeout)
	case c.MaxTimeout < c.DefaultTimeout || c.MaxTimeout%time.Second != 0:
		return fmt.Errorf("maximum timeout %v: must be a whole number of seconds, at least the default timeout %v", c.MaxTimeout, c.DefaultTimeout)
	case c.MaxConcurrent < 1:
		return fmt.Errorf("max concurrent commands %d: must be at least 1", c.MaxConcurrent)
	case c.MaxProcesses < 1:
		return fmt.Errorf("max processes per session %d: must be at least 1", c.MaxProcesses)
	case c.StatelessProcesses < 1:
		return fmt.Errorf("max stateless processes %d: must be at least 1", c.StatelessProcesses)
	case c.StatelessIdleTimeout <= 0 || c.StatelessUnusedTimeout <= 0:
		return fmt.Errorf("stateless idle timeout %v and unused timeout %v: must be positive", c.StatelessIdleTimeout, c.StatelessUnusedTimeout)
	case c.ProcessLifetime < time.Second:
		return fmt.Errorf("process lifetime %v: must be at least 1s", c.ProcessLifetime)
	case c.ProcessBuffer < 4<<10 || c.ProcessBuffer > 64<<20:
		return fmt.Errorf("process buffer %d bytes: must be between 4 KiB and 64 MiB", c.ProcessBuffer)
	case c.OutputCap < minOutputCap || c.OutputCap > MaxOutputCap:
		return fmt.Errorf("output cap %d bytes: must be between %d and %d (1 MiB)", c.OutputCap, minOutputCap, MaxOutputCap)
	case c.OutputBudget != -1 && c.OutputBudget < minOutputBudget:
		return fmt.Errorf("output budget %d bytes: must be at least %d (2 MiB), or -1 to keep no full outputs", c.OutputBudget, minOutputBudget)
	case c.ProtectScanEntries < 0:
		return fmt.Errorf("protected files' scan bound %d entries: must not be negative (0 is the default, %d)", c.ProtectScanEntries, protectMaxEntries)
	case c.OutputBudget != -1 && c.OutputTotal < c.OutputBudget:
		return fmt.Errorf("output total %d bytes: must be at least the per-session output budget, %d bytes", c.OutputTotal, c.OutputBudget)
	}
	return nil
}

// Executor is the executor MCP server: the sandbox_run_command tool over one backend and one workspace.
type Executor struct {
	cfg     Config
	backend backend.Backend
	guard   *pathguard.Guard
	logger  *slog.Logger
	server  *mcp.Server
	slots   chan struct{} // one per running command (Config.MaxConcurrent)
	procs   *processes.Table
	outputs *outputs.Store // the full outputs of truncated streams, per session
	protect *protector     // nil when no path is protected
	run     runner         // the backend, with the protected paths' sweep around each command
}

// New builds the executor over the backend b and the workspace g. The caller keeps ownership of both and closes them.
func New(cfg Config, b backend.Backend, g *pathguard.Guard, logger *slog.Logger) (*Executor, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	logger = cmp.Or(logger, slog.New(slog.DiscardHandler))
	e := &Executor{cfg: cfg, backend: b, guard: g, logger: logger, slots: make(chan struct{}, cfg.MaxConcurrent),
		outputs: outputs.New(max(cfg.OutputBudget, 0), cfg.OutputTotal, cfg.StatelessIdleTimeout, logger)}
	if len(cfg.Protection.Patterns()) > 0 {
		enforcer, ok := b.(backend.ProtectEnforcer)
		p, err := newProtector(cfg.Protection, g, cfg.QuarantineDir, cmp.Or(cfg.ProtectScanEntries, protectMaxEntries), ok && enforcer.EnforcesProtected(), logger)
		if err != nil {
			return nil, fmt.Errorf("protected files: %w", err)
		}
		e.protect = p
	}
	e.run = runner{backend: b, protect: e.protect, workspace: g.Dir()}
	if l, ok := b.(backend.Layered); ok && l.Layered() {
		// Each command works on a layer of its own: its changes reach the workspace through this guard only.
		var err error
		if e.run.layers, err = wsguard.New(g.Dir(), cfg.Protection); err != nil {
			return nil, fmt.Errorf("workspace guard: %w", err)
		}
	}
	e.procs = processes.New(processes.Settings{Max: cfg.MaxProcesses, StatelessMax: cfg.StatelessProcesses,
		StatelessIdle: cfg.StatelessIdleTimeout, StatelessUnused: cfg.StatelessUnusedTimeout, Lifetime: cfg.ProcessLifetime,
		Buffer: cfg.ProcessBuffer, BufferTotal: cfg.ProcessBufferTotal, StdinWriteTimeout: cfg.StdinWriteTimeout,
		Outputs: e.outputs, Run: e.runProcess, Logger: logger, HoldsBack: holdsBack(b)})
	e.server = mcp.NewServer(&mcp.Implementation{Name: Name, Title: "goalbox command executor", Version: mcpserve.Version()}, &mcp.ServerOptions{
		Instructions: fmt.Sprintf("Runs shell commands (sh -c) in the workspace %s on the %q backend. Paths are relative to the workspace. "+
			"Default timeout %ds, maximum %ds; each of stdout and stderr keeps at most %d bytes (head and tail); "+
			"a stream cut short stays readable whole, by this session, as the resource its result names (resources/read, or the tool "+protocol.ToolReadOutput+").",
			g.AdvertisedRoot(), b.Name(), int(cfg.DefaultTimeout.Seconds()), int(cfg.MaxTimeout.Seconds()), cfg.OutputCap) +
			fallbackNote(b),
		Logger: logger,
	})
	mcpserve.AddTool(e.server, logger, &mcp.Tool{
		Name: protocol.ToolRunCommand,
		Description: fmt.Sprintf("Run a shell command (sh -c) in the sandbox, in the workspace or the folder cwd (relative to the workspace). "+
			"A non-zero exit_code is a normal result; exit_code is -1 when the command was killed (timeout or cancellation). "+
			"timeout_seconds defaults to %d and may be at most %d. stdout and stderr keep their first and last bytes, at most %d each, "+
			"with a marker saying how many bytes were left out; a stream cut short stays readable whole as the resource "+
			"stdout_resource or stderr_resource names (resources/read, or the tool "+protocol.ToolReadOutput+", in pages), for this session, while its budget lasts. No process the command starts outlives the call; %s",
			int(cfg.DefaultTimeout.Seconds()), int(cfg.MaxTimeout.Seconds()), cfg.OutputCap, networkSentence(b.Confinement().Egress)) +
			fallbackNote(b),
		Annotations: mcpserve.Annotations(mcpserve.Hints{Title: "Run a shell command", Destructive: true}),
	}, e.runCommand)
	e.addProcessTools()
	if e.outputs.Keeps() {
		e.outputs.AddResources(e.server, func(ctx context.Context, ss *mcp.ServerSession) outputs.Owner { return ownerOf(ctx, ss) })
		e.addReadOutputTool()
	}
	return e, nil
}

// ownerOf is whom what the call ctx and ss belong to makes (its processes, its kept outputs) belongs to: the session,
// or for a request without one (MCP 2026-07-28 over HTTP) the stateless era, whose processes and outputs are reached
// by their handles alone (package processes, stateless.go).
func ownerOf(ctx context.Context, ss *mcp.ServerSession) outputs.Owner {
	if mcpserve.Stateless(ctx) {
		return outputs.Owner{Stateless: true, Client: mcpserve.StatelessClient(ctx), Clients: mcpserve.StatelessClients(ctx)}
	}
	return outputs.SessionOwner(ss)
}

// Server is the MCP server, for mcpserve.Run or mcpserve.Start.
func (e *Executor) Server() *mcp.Server { return e.server }

// Health is what the health endpoint reports. Whoever reaches the port may read it, so the workspace appears as
// clients see it (the advertised root), never by its host path, in the confinement report too.
func (e *Executor) Health() protocol.ExecutorHealth {
	return protocol.ExecutorHealth{
		Server:         Name,
		Version:        mcpserve.Version(),
		Workspace:      e.guard.AdvertisedRoot(),
		Backend:        e.backend.Name(),
		BackendChoice:  e.cfg.BackendChoice,
		BackendRule:    e.cfg.BackendRule,
		BackendReason:  advertise(e.cfg.BackendReason, e.guard.Dir(), e.guard.AdvertisedRoot()).(string),
		Confinement:    e.confinement(),
		Policy:         e.cfg.Policy.Describe(),
		TimeoutDefault: int(e.cfg.DefaultTimeout.Seconds()),
		TimeoutMax:     int(e.cfg.MaxTimeout.Seconds()),
		OutputCap:      e.cfg.OutputCap,
		MaxConcurrent:  e.cfg.MaxConcurrent,
		FullOutputs:    e.outputs.Health(),
		ProcessBuffers: protocol.ProcessBuffersHealth{Total: e.cfg.ProcessBufferTotal, Bytes: e.procs.BuffersInUse()},
	}
}

// confinement is the backend's report with the workspace advertised: every string in it that names the
// workspace's host path names the advertised root instead (advertise walks the report's JSON, so no field is missed).
func (e *Executor) confinement() protocol.Confinement {
	c := e.backend.Confinement()
	if c.Sandbox == nil {
		c.Sandbox = &protocol.SandboxPolicy{Summary: e.backend.Name() + " backend", ProtectedEnforcement: protocol.ProtectedSweep}
	}
	c.Sandbox.Protected = e.cfg.Protection.Patterns()
	if e.protect == nil {
		c.Sandbox.ProtectedEnforcement = protocol.ProtectedNone
		if c.WorkspaceGuard != nil && c.WorkspaceGuard.Mode == protocol.ProtectedSweep {
			c.WorkspaceGuard.Mode = protocol.ProtectedNone
		}
	} else if c.WorkspaceGuard != nil && c.WorkspaceGuard.Mode == protocol.ProtectedSweep {
		c.WorkspaceGuard.Sweep = e.protect.bounds()
	}
	var generic any
	b, err := json.Marshal(c)
	if err == nil {
		err = json.Unmarshal(b, &generic)
	}
	if err == nil {
		b, err = json.Marshal(advertise(generic, e.guard.Dir(), e.guard.AdvertisedRoot()))
	}
	if err == nil {
		c = protocol.Confinement{}
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		e.logger.Error("confinement report", "error", err)
		if c.LocalConfinement == nil {
			c.LocalConfinement = &protocol.LocalConfinement{}
		}
		c.Warnings = append(c.Warnings, "the backend's confinement report could not be read: "+err.Error())
	}
	return c
}

func (e *Executor) runCommand(ctx context.Context, req *mcp.CallToolRequest, in protocol.RunCommandInput) (runCommandResult, error) {
	var out runCommandResult
	r, err := e.check(in)
	if err != nil {
		return out, err
	}
	stdout, stderr := newCappedWriter(e.cfg.OutputCap), newCappedWriter(e.cfg.OutputCap)
	r.Stdout, r.Stderr = stdout, stderr
	kept := e.keepRunOutputs(ownerOf(ctx, req.Session), &r)
	defer kept.close()

	start := time.Now()
	// A free slot first. The wait counts against the call's timeout: a client that gave 10 seconds gets an answer
	// within about 10 seconds, run or not.
	select {
	case e.slots <- struct{}{}:
	default:
		waited := time.NewTimer(r.Timeout)
		select {
		case e.slots <- struct{}{}:
			waited.Stop()
		case <-waited.C:
			return out, fmt.Errorf("the executor already runs %d commands at once (its -max-concurrent), and none ended within this call's timeout of %v; try again later or with a longer timeout_seconds",
				e.cfg.MaxConcurrent, r.Timeout)
		case <-ctx.Done():
			return out, fmt.Errorf("cancelled while waiting for one of the %d commands already running to end", e.cfg.MaxConcurrent)
		}
		r.Timeout -= time.Since(start)
		if r.Timeout < time.Second {
			r.Timeout = time.Second
		}
	}
	defer func() { <-e.slots }()
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
		done := make(chan struct{})
		defer close(done)
		go e.progress(ctx, req.Session, tok, start, r.Timeout, done, stdout, stderr)
	}
	res, undone, err := e.run.run(ctx, r)
	out.DurationMs = time.Since(start).Milliseconds()
	if err != nil {
		e.logger.Error("command could not run", "backend", e.backend.Name(), "error", err)
		return out, fmt.Errorf("the command %s (details in the server log)", e.run.failure(err))
	}
	out.ExitCode, out.TimedOut = res.ExitCode, res.TimedOut
	out.NetworkDenied, out.Network = res.NetworkDenied, res.Network
	if len(undone.undone) > 0 {
		_, _ = stderr.Write([]byte(protectedNote(undone)))
		out.ProtectedUndone = undone.undone
	}
	if len(res.WorkspaceRefused) > 0 {
		_, _ = stderr.Write([]byte(wsguard.Note(res.WorkspaceRefused)))
		out.WorkspaceRefused = res.WorkspaceRefused
	}
	out.Stdout, out.StdoutTruncated = stdout.String()
	out.Stderr, out.StderrTruncated = stderr.String()
	logArgs := []any{"exit_code", out.ExitCode, "timed_out", out.TimedOut, "duration_ms", out.DurationMs,
		"stdout_bytes", stdout.Total(), "stderr_bytes", stderr.Total()}
	if ctx.Err() != nil {
		// Why the call was cancelled: the client's notifications/cancelled, its connection closing, its session
		// ending (deleted, expired, evicted) or the server shutting down (mcpserve's Err values).
		logArgs = append(logArgs, "cancelled", context.Cause(ctx).Error())
	}
	e.logger.Debug("command ran", logArgs...)
	kept.close()
	result := kept.result(out.RunCommandOutput)
	if !e.cfg.ResourceLinks {
		result.links = nil
	}
	return result, nil
}

// networkSentence tells a model what its commands may reach.
func networkSentence(eg *protocol.EgressHealth) string {
	if eg == nil {
		return "the network is not reachable."
	}
	ports := make([]string, len(eg.DefaultPorts))
	for i, p := range eg.DefaultPorts {
		ports[i] = fmt.Sprint(p)
	}
	return fmt.Sprintf("the network is reachable only through the executor's HTTP proxy (HTTP_PROXY and HTTPS_PROXY are set; curl, pip, npm, go, cargo and git use them), "+
		"and only to these -net-allow entries: %s (a host without :port means ports %s; a CIDR entry admits IP addresses in it). "+
		"Anything else is refused with a 403 and listed in the result's network_denied; the hosts reached are listed in network.",
		strings.Join(eg.Allow, ", "), strings.Join(ports, " and ")) + secretsSentence(eg.Secrets)
}

// secretsSentence tells a model how to use the -secret credentials it cannot see.
func secretsSentence(secrets []string) string {
	if len(secrets) == 0 {
		return ""
	}
	var uses []string
	for _, s := range secrets {
		name, hosts, _ := strings.Cut(s, "@")
		uses = append(uses, fmt.Sprintf("$%s for https://%s", name, strings.ReplaceAll(hosts, ",", " and https://")))
	}
	return " Credentials: " + strings.Join(uses, "; ") + " (each variable holds a placeholder the proxy replaces by the real value only in HTTPS requests to those hosts: use it in a header or in the URL as usual; sent anywhere else it is refused)."
}

// advertise returns v with the workspace's host path dir replaced by root wherever it appears as a path (itself or
// a prefix of a longer path) in a string, a list or a nested map.
func advertise(v any, dir, root string) any {
	if dir == "" {
		return v
	}
	switch v := v.(type) {
	case string:
		var b strings.Builder
		prev := byte(0) // the byte before rest
		for rest := v; ; {
			i := strings.Index(rest, dir)
			if i < 0 {
				b.WriteString(rest)
				return b.String()
			}
			before := prev
			if i > 0 {
				before = rest[i-1]
			}
			end := i + len(dir)
			if (before == 0 || !isPathByte(before)) && (end == len(rest) || rest[end] == '/' || !isPathByte(rest[end])) {
				b.WriteString(rest[:i] + root)
			} else {
				b.WriteString(rest[:end])
			}
			prev, rest = rest[end-1], rest[end:]
		}
	case []string:
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = advertise(s, dir, root).(string)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = advertise(x, dir, root)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = advertise(x, dir, root)
		}
		return out
	}
	return v
}

func isPathByte(c byte) bool {
	return c == '/' || c == '.' || c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// check turns the tool input into a backend request, or says what is wrong with it and what is allowed.
func (e *Executor) check(in protocol.RunCommandInput) (backend.Request, error) {
	maxS := int(e.cfg.MaxTimeout.Seconds())
	switch {
	case strings.TrimSpace(in.Command) == "":
		return backend.Request{}, errors.New("command is empty: give a shell command to run with sh -c, e.g. \"go test ./...\"")
	case strings.IndexByte(in.Command, 0) >= 0:
		return backend.Request{}, errors.New("command contains a NUL byte: a shell command cannot carry one (pass binary data on stdin)")
	case len(in.Command) > maxCommandBytes:
		return backend.Request{}, fmt.Errorf("command is %d bytes: the most sh -c can take is %d; write a long script to a file in the workspace and run that", len(in.Command), maxCommandBytes)
	case in.TimeoutSeconds < 0 || in.TimeoutSeconds > maxS:
		return backend.Request{}, fmt.Errorf("timeout_seconds %d is out of range: give 1 to %d, or leave it out for the default %d",
			in.TimeoutSeconds, maxS, int(e.cfg.DefaultTimeout.Seconds()))
	}
	rel, fi, err := e.guard.Stat(in.Cwd)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || pathguard.IsReason(err, pathguard.ReasonNotFound) {
			return backend.Request{}, fmt.Errorf("cwd %q does not exist in the workspace: give an existing folder relative to the workspace, or leave it out for the workspace itself", in.Cwd)
		}
		return backend.Request{}, fmt.Errorf("cwd: %v", err)
	}
	if !fi.IsDir() {
		return backend.Request{}, fmt.Errorf("cwd %q is not a folder: give a folder relative to the workspace", rel)
	}
	if err := e.cfg.Policy.Check(in.Command); err != nil {
		return backend.Request{}, err
	}
	timeout := e.cfg.DefaultTimeout
	if in.TimeoutSeconds > 0 {
		timeout = time.Duration(in.TimeoutSeconds) * time.Second
	}
	return backend.Request{Command: in.Command, Dir: rel, Stdin: in.Stdin, Timeout: timeout}, nil
}

// progress tells the client, about once a second, how long the command has run and how much it printed. Progress is
// the elapsed seconds and Total the timeout, so a client can draw how close the command is to being killed.
func (e *Executor) progress(ctx context.Context, ss *mcp.ServerSession, tok any, start time.Time, timeout time.Duration, done <-chan struct{}, stdout, stderr *cappedWriter) {
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		elapsed := time.Since(start)
		err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: tok,
			Progress:      elapsed.Seconds(),
			Total:         timeout.Seconds(),
			Message: fmt.Sprintf("running for %ds; %d bytes on stdout, %d on stderr so far",
				int(elapsed.Seconds()), stdout.Total(), stderr.Total()),
		})
		if err != nil {
			e.logger.Debug("progress notification not sent", "error", err)
		}
	}
}

// holdsBack says whether b may hold commands back until there is room under its total caps (backend.HoldsBack).
func holdsBack(b backend.Backend) bool {
	h, ok := b.(backend.HoldsBack)
	return ok && h.HoldsBack()
}

// fallbackNote is what the client is told, in the server's instructions and in sandbox_run_command's description, when
// commands run without namespaces of their own (the local backend's fallback): the server's stderr is not where a
// desktop client's user looks. "" otherwise.
func fallbackNote(b backend.Backend) string {
	if !b.Confinement().WithoutNamespaces() {
		return ""
	}
	return " WEAKER SANDBOX: this machine does not allow user namespaces, so commands run in the local backend's fallback, " +
		"without namespaces of their own: they see the host's processes and its network interfaces, and are confined by " +
		"Landlock and seccomp only (/healthz lists the gaps). The executor's -require-namespaces refuses to start instead."
}
