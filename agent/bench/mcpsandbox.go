package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPSandbox grades through an executor's sandbox_run_command tool over any MCP client session: an in-process
// server (LocalExecutor), a running one over HTTP, or one in a container. The grader's commands are confined
// exactly as the agent's are.
type MCPSandbox struct {
	Session *mcp.ClientSession
}

// Run calls sandbox_run_command. Output is stdout followed by stderr. A tool error (isError) or a transport
// failure is returned as err; a command that fails is a normal result.
func (s MCPSandbox) Run(ctx context.Context, command, cwd string, timeout time.Duration) (int, string, error) {
	in := protocol.RunCommandInput{Command: command, Cwd: cwd, TimeoutSeconds: int(math.Ceil(timeout.Seconds()))}
	res, err := s.Session.CallTool(ctx, &mcp.CallToolParams{Name: protocol.ToolRunCommand, Arguments: in})
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", protocol.ToolRunCommand, err)
	}
	if res.IsError {
		return 0, "", fmt.Errorf("%s refused: %s", protocol.ToolRunCommand, toolText(res))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return 0, "", err
	}
	var out protocol.RunCommandOutput
	if err := json.Unmarshal(raw, &out); err != nil || res.StructuredContent == nil {
		return 0, "", fmt.Errorf("%s: the result has no valid structured content: %v", protocol.ToolRunCommand, err)
	}
	text := out.Stdout
	if out.Stderr != "" {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += out.Stderr
	}
	return out.ExitCode, text, nil
}

func toolText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}

// LocalExecutor is a SandboxFactory that starts the executor in-process over each workspace root with the local
// backend (namespaces, Landlock, rlimits, scrubbed environment) and calls it through an MCP client over an
// in-memory transport. Commands may also read the shared JavaScript modules, which live outside the system
// folders the backend opens by default.
func LocalExecutor(tc Toolchains, logger *slog.Logger) SandboxFactory {
	return func(ctx context.Context, root string) (Sandbox, func() error, error) {
		guard, err := pathguard.Open(root, pathguard.Options{})
		if err != nil {
			return nil, nil, err
		}
		// Build caches shared by every grade (explicitly: each exercise still gets its own home and temp).
		backend, err := local.New(local.Config{Workspace: guard.Dir(), CacheDir: GraderCacheDir(),
			SharedCacheDir: filepath.Join(GraderCacheDir(), "shared"), ExtraReadDirs: tc.readDirs()}, logger)
		if err != nil {
			guard.Close()
			return nil, nil, err
		}
		exec, err := execserver.New(execserver.Config{}, backend, guard, logger)
		if err != nil {
			return nil, nil, errors.Join(err, backend.Close(), guard.Close())
		}
		serverT, clientT := mcp.NewInMemoryTransports()
		ss, err := exec.Server().Connect(ctx, serverT, nil)
		if err != nil {
			return nil, nil, errors.Join(err, backend.Close(), guard.Close())
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "goalbox-bench", Version: "0.1.0"}, nil)
		cs, err := client.Connect(ctx, clientT, nil)
		if err != nil {
			return nil, nil, errors.Join(err, ss.Close(), backend.Close(), guard.Close())
		}
		closeAll := func() error {
			return errors.Join(cs.Close(), ss.Wait(), backend.Close(), guard.Close())
		}
		return MCPSandbox{Session: cs}, closeAll, nil
	}
}

// GraderCacheDir is the grading sandbox's home and build caches: a folder of its own, not the executor's default,
// which the agent's in-process servers in the goal mode use. A model's command could otherwise leave something
// there (a usercustomize.py that prints a pytest success and exits 0) that a later grade would run.
func GraderCacheDir() string { return filepath.Join(CacheDir(), "grader-sandbox") }

// readDirs are the folders outside the system ones that test commands must read: the shared JavaScript modules
// (and where their symlink leads). Both the grader's sandbox and the agent's get them.
func (tc Toolchains) readDirs() []string {
	var extra []string
	if tc.JSModules != "" {
		extra = append(extra, filepath.Dir(tc.JSModules))
		if real, err := filepath.EvalSymlinks(tc.JSModules); err == nil {
			extra = append(extra, filepath.Dir(real))
		}
	}
	return extra
}
