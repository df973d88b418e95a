package protocol

// ToolRunCommand runs one shell command to its end; the executor's process tools are in process.go.
const ToolRunCommand = "sandbox_run_command"

// RunCommandInput is a shell command to run in the sandbox.
type RunCommandInput struct {
	Command        string `json:"command" jsonschema:"shell command, run by sh -c"`
	Cwd            string `json:"cwd,omitempty" jsonschema:"folder to run in, relative to the workspace; default ."`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"seconds before the command is killed; default and maximum are set by the server"`
	Stdin          string `json:"stdin,omitempty" jsonschema:"text given to the command on standard input"`
}

// RunCommandOutput is how a command ended. A non-zero ExitCode is a normal result; ExitCode is -1 when the command
// was killed (timeout, cancellation). Output over the server's cap keeps its head and tail around a marker that says
// how many bytes were left out; the whole stream then stays readable, for the life of the MCP session and within its
// budget, as the resource StdoutResource or StderrResource names (resources/read, by that session only). Those are
// omitted when the stream was not truncated, or could not be kept (it alone outgrew the budget).
type RunCommandOutput struct {
	ExitCode        int    `json:"exit_code"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	TimedOut        bool   `json:"timed_out"`
	DurationMs      int64  `json:"duration_ms"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	StdoutResource  string `json:"stdout_resource,omitempty" jsonschema:"when stdout was truncated: URI of the whole stdout, for sandbox_read_output or resources/read (in pages: ?offset=&length=)"`
	StderrResource  string `json:"stderr_resource,omitempty" jsonschema:"when stderr was truncated: URI of the whole stderr, for sandbox_read_output or resources/read (in pages: ?offset=&length=)"`
	// ProtectedUndone lists the protected project files (git hooks and config, editor settings, .envrc...) the
	// command created or changed, which the server undid after it ended.
	ProtectedUndone []string `json:"protected_undone,omitempty" jsonschema:"protected project files (git hooks and config, editor and agent settings, .envrc) the command created or changed; they were undone and kept out of the workspace"`
	// WorkspaceRefused lists the changes of the command the workspace guard did not apply (where the backend gives
	// each command a copy-on-write layer of the workspace): the workspace keeps what it had at each path.
	WorkspaceRefused []WorkspaceRefusal `json:"workspace_refused,omitempty" jsonschema:"changes the command made that were not applied to the workspace, with why (a protected project file, a symlink leading out, a device or FIFO, a set-id bit); the workspace keeps what it had there"`

	// With -net-allow: what the egress proxy refused this command, and what it reached.
	NetworkDenied []string      `json:"network_denied,omitempty" jsonschema:"host:port the egress proxy refused to this command (not in the executor's -net-allow, or an address never reachable)"`
	Network       []NetworkHost `json:"network,omitempty" jsonschema:"hosts this command reached through the egress proxy, with bytes"`
}

// WorkspaceRefusal is one change of a command the workspace guard refused: its workspace-relative path and why.
type WorkspaceRefusal struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// NetworkHost is one host:port a command reached through the egress proxy, and how much went each way.
type NetworkHost struct {
	Host          string `json:"host"` // host:port as asked
	Connections   int    `json:"connections"`
	BytesSent     int64  `json:"bytes_sent"`
	BytesReceived int64  `json:"bytes_received"`
}

// OutputResourceScheme is the URI scheme of the full outputs the executor keeps: OutputResourceScheme + "://" + an
// ID + "/stdout" or "/stderr", with an optional query "?offset=N&length=M" for one page.
const OutputResourceScheme = "goalbox-output"

// Default listen addresses and endpoint of the two servers.
const (
	DefaultFilesystemAddr = "127.0.0.1:7101"
	DefaultExecutorAddr   = "127.0.0.1:7102"
	EndpointPath          = "/mcp"
	HealthPath            = "/healthz"
)
