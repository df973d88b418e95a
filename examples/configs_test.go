package examples_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientConfig is the part of a Claude Desktop or Cursor MCP config that starts a stdio server.
type clientConfig struct {
	MCPServers map[string]struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	} `json:"mcpServers"`
}

// TestClientConfigs starts every server of the Claude Desktop and the Cursor config as those clients do (the command
// with its args and env, MCP over stdin/stdout), with the binaries built into a home folder made for the test and
// the placeholders the client would fill in replaced: the filesystem server writes a file and the executor's
// command reads it from the same workspace.
func TestClientConfigs(t *testing.T) {
	home := t.TempDir()
	buildServers(t, filepath.Join(home, "bin"))
	for _, c := range []struct {
		file      string
		workspace string // the folder the config makes the workspace, under home
		fill      []string
	}{
		{"claude-desktop/claude_desktop_config.json", "sandbox", []string{"/home/me", home}},
		// Cursor fills in ${userHome} and ${workspaceFolder} (the project open in it) itself.
		{"cursor/mcp.json", "project", []string{"${userHome}", home, "${workspaceFolder}", filepath.Join(home, "project")}},
	} {
		t.Run(filepath.Dir(c.file), func(t *testing.T) {
			ws := filepath.Join(home, c.workspace)
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			var cfg clientConfig
			if err := json.Unmarshal([]byte(strings.NewReplacer(c.fill...).Replace(string(raw))), &cfg); err != nil {
				t.Fatalf("%s: %v", c.file, err)
			}
			fs, exe := connectStdio(t, cfg, "goalbox-fs"), connectStdio(t, cfg, "goalbox-exec")

			name := c.workspace + ".txt"
			callTool(t, fs, "sandbox_write_file", map[string]any{"path": name, "content": "written through " + c.file})
			out := callTool(t, exe, "sandbox_run_command", map[string]any{"command": "cat " + name})
			if out["exit_code"] != 0.0 || out["stdout"] != "written through "+c.file {
				t.Errorf("the executor read back %v", out)
			}
			if b, err := os.ReadFile(filepath.Join(ws, name)); err != nil || string(b) != "written through "+c.file {
				t.Errorf("%s in the configured workspace: %q, %v", name, b, err)
			}
		})
	}
}

// connectStdio starts the config's server name over stdio and returns a client session to it, closed (and the
// server with it) when the test ends.
func connectStdio(t *testing.T, cfg clientConfig, name string) *mcp.ClientSession {
	t.Helper()
	srv, ok := cfg.MCPServers[name]
	if !ok {
		t.Fatalf("the config has no server %q", name)
	}
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Env = os.Environ()
	for k, v := range srv.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "examples-test", Version: "1"}, nil)
	s, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("start %s (%s %v) over stdio: %v", name, srv.Command, srv.Args, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
