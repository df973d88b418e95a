package protocol

// The executor's long-running processes: a dev server, a watcher, a REPL. A process runs under exactly the
// confinement of sandbox_run_command, belongs to the MCP session that started it, and shares a loopback with the
// executor's later commands.
const (
	ToolStartProcess      = "sandbox_start_process"
	ToolReadProcessOutput = "sandbox_read_process_output"
	ToolWriteProcessInput = "sandbox_write_process_input"
	ToolStopProcess       = "sandbox_stop_process"
	ToolListProcesses     = "sandbox_list_processes"
)

// StartProcessInput is a shell command to start in the background.
type StartProcessInput struct {
	Command string `json:"command" jsonschema:"shell command, run by sh -c"`
	Cwd     string `json:"cwd,omitempty" jsonschema:"folder to run in, relative to the workspace; default ."`
	Stdin   string `json:"stdin,omitempty" jsonschema:"open: the process's stdin stays open for sandbox_write_process_input; closed (default): it sees EOF at once"`
}

// StartProcessOutput names the started process.
type StartProcessOutput struct {
	ProcessID string `json:"process_id"`
	StartedAt string `json:"started_at"` // RFC 3339, UTC: when it was asked for
	// Queued: the process waits for room under the executor's total caps and has not started; it starts when a
	// command or process ends (sandbox_read_process_output says when: queued false, running true).
	Queued bool `json:"queued,omitempty" jsonschema:"true while the process waits for room under the executor's total caps: it has not started yet (running is false)"`
}

// ReadProcessOutputInput asks for what a process printed since the given byte offsets.
type ReadProcessOutputInput struct {
	ProcessID    string `json:"process_id"`
	StdoutOffset int64  `json:"stdout_offset,omitempty" jsonschema:"byte offset in stdout to read from, counted from the process's start; default 0"`
	StderrOffset int64  `json:"stderr_offset,omitempty" jsonschema:"byte offset in stderr to read from; default 0"`
	WaitSeconds  int    `json:"wait_seconds,omitempty" jsonschema:"wait up to this many seconds (at most 30) for new output or the exit; default 0, answer at once"`
}

// ReadProcessOutputOutput is the output since the offsets asked for. The next offsets are where to read on from;
// a dropped count says how many bytes after the asked offset the process's buffer no longer held. Once a stream has
// outgrown the buffer, StdoutResource or StderrResource names the whole stream from its first byte (the same
// offsets), readable by this session with resources/read while the session's budget for full outputs keeps it;
// they are omitted before that, and once it was evicted.
type ReadProcessOutputOutput struct {
	ProcessID      string `json:"process_id"`
	Running        bool   `json:"running"`
	Queued         bool   `json:"queued,omitempty" jsonschema:"true while the process waits for room under the executor's total caps: it has not started yet (running is false)"`
	ExitCode       *int   `json:"exit_code"` // null while running; -1 when killed
	Stdout         string `json:"stdout"`
	Stderr         string `json:"stderr"`
	StdoutOffset   int64  `json:"stdout_offset"`
	StderrOffset   int64  `json:"stderr_offset"`
	StdoutDropped  int64  `json:"stdout_dropped"`
	StderrDropped  int64  `json:"stderr_dropped"`
	DurationMs     int64  `json:"duration_ms"`
	StdoutResource string `json:"stdout_resource,omitempty" jsonschema:"once stdout outgrew the process's buffer: URI of the whole stdout from its first byte (so far, while it runs), for sandbox_read_output or resources/read (in pages, the same offsets as here)"`
	StderrResource string `json:"stderr_resource,omitempty" jsonschema:"once stderr outgrew the process's buffer: URI of the whole stderr from its first byte (so far, while it runs), for sandbox_read_output or resources/read (in pages, the same offsets as here)"`

	// With -net-allow, once the process ended: what the egress proxy refused it, and what it reached.
	NetworkDenied []string      `json:"network_denied,omitempty" jsonschema:"once ended: host:port the egress proxy refused to this process"`
	Network       []NetworkHost `json:"network,omitempty" jsonschema:"once ended: hosts this process reached through the egress proxy, with bytes"`
	// WorkspaceRefused, once the process ended: its changes the workspace guard did not apply (RunCommandOutput's).
	WorkspaceRefused []WorkspaceRefusal `json:"workspace_refused,omitempty" jsonschema:"once ended: changes the process made that were not applied to the workspace, with why; the workspace keeps what it had there"`
}

// WriteProcessInputInput is data for a process's open stdin.
type WriteProcessInputInput struct {
	ProcessID string `json:"process_id"`
	Data      string `json:"data" jsonschema:"text to write to the process's stdin"`
	Close     bool   `json:"close,omitempty" jsonschema:"close the process's stdin after the data (it sees EOF)"`
}

// WriteProcessInputOutput says how much was written.
type WriteProcessInputOutput struct {
	BytesWritten int `json:"bytes_written"`
}

// StopProcessInput stops a process: SIGTERM to its whole tree, SIGKILL after the grace.
type StopProcessInput struct {
	ProcessID    string `json:"process_id"`
	GraceSeconds *int   `json:"grace_seconds,omitempty" jsonschema:"seconds between SIGTERM and SIGKILL (0 to 60); default 5"`
}

// StopProcessOutput is how the process ended; Killed says SIGKILL was needed (or it had been killed already).
type StopProcessOutput struct {
	ProcessID string `json:"process_id"`
	ExitCode  int    `json:"exit_code"`
	Killed    bool   `json:"killed"`

	// With -net-allow: what the egress proxy refused the process, and what it reached.
	NetworkDenied []string      `json:"network_denied,omitempty"`
	Network       []NetworkHost `json:"network,omitempty"`
	// WorkspaceRefused: the process's changes the workspace guard did not apply.
	WorkspaceRefused []WorkspaceRefusal `json:"workspace_refused,omitempty"`
}

// ListProcessesInput takes nothing.
type ListProcessesInput struct{}

// ListProcessesOutput is the session's processes, running and ended.
type ListProcessesOutput struct {
	Processes []ProcessInfo `json:"processes"`
}

// ProcessInfo is one process of a session.
type ProcessInfo struct {
	ProcessID  string `json:"process_id"`
	Command    string `json:"command"`
	Running    bool   `json:"running"`
	Queued     bool   `json:"queued,omitempty"` // waiting for room under the total caps: not started yet
	ExitCode   *int   `json:"exit_code"`
	StartedAt  string `json:"started_at"`
	DurationMs int64  `json:"duration_ms"`
}
