package protocol

// ToolRunCommand is the executor's one tool.
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
// how many bytes were left out.
type RunCommandOutput struct {
	ExitCode        int    `json:"exit_code"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	TimedOut        bool   `json:"timed_out"`
	DurationMs      int64  `json:"duration_ms"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
}

// Default listen addresses and endpoint of the two servers.
const (
	DefaultFilesystemAddr = "127.0.0.1:7101"
	DefaultExecutorAddr   = "127.0.0.1:7102"
	EndpointPath          = "/mcp"
	HealthPath            = "/healthz"
)
