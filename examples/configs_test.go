package examples_test

import (
	"context"
	"encoding/json"
	"net/http"
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

// TestClientConfigs starts every server of the Claude Desktop configs (Linux, macOS, Windows) and the Cursor config
// as those clients do (the command with its args and env, MCP over stdin/stdout), with the binaries built into a
// home folder made for the test and the placeholders the client would fill in replaced: the filesystem server
// writes a file and the executor's command reads it from the same workspace. The macOS and Windows files run here
// with their home folder mapped onto the test's (and, for Windows, C:\Users\me\...\x.exe onto HOME/.../x), so
// what is checked is their shape — the same servers, flags and workspace — and, for Windows, that the JSON holds
// Windows paths with escaped backslashes.
func TestClientConfigs(t *testing.T) {
	home := t.TempDir()
	buildServers(t, filepath.Join(home, "bin"))
	for _, c := range []struct {
		file      string
		workspace string // the folder the config makes the workspace, under home
		fill      []string
	}{
		{"claude-desktop/claude_desktop_config.json", "sandbox", []string{"/home/me", home}},
		{"claude-desktop/claude_desktop_config.macos.json", "sandbox", []string{"/Users/me", home}},
		{"claude-desktop/claude_desktop_config.windows.json", "sandbox", []string{`C:\\Users\\me`, home, `\\`, "/", `.exe"`, `"`}},
		// Cursor fills in ${userHome} and ${workspaceFolder} (the project open in it) itself.
		{"cursor/mcp.json", "project", []string{"${userHome}", home, "${workspaceFolder}", filepath.Join(home, "project")}},
	} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			ws := filepath.Join(home, c.workspace)
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(c.file, ".windows.json") {
				checkWindowsConfig(t, raw)
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

// checkWindowsConfig: every command and workspace is an absolute Windows path (drive letter, backslashes, escaped
// in the JSON), the commands are .exe files, and both servers get the same workspace.
func checkWindowsConfig(t *testing.T, raw []byte) {
	t.Helper()
	var cfg clientConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	winAbs := func(p string) bool {
		return len(p) > 3 && p[1] == ':' && p[2] == '\\' && !strings.Contains(p, "/")
	}
	var workspaces []string
	for name, srv := range cfg.MCPServers {
		if !winAbs(srv.Command) || !strings.HasSuffix(srv.Command, ".exe") {
			t.Errorf("%s: command %q is not an absolute Windows path to an .exe", name, srv.Command)
		}
		for i, a := range srv.Args {
			if a == "-workspace" && i+1 < len(srv.Args) {
				if !winAbs(srv.Args[i+1]) {
					t.Errorf("%s: workspace %q is not an absolute Windows path", name, srv.Args[i+1])
				}
				workspaces = append(workspaces, srv.Args[i+1])
			}
		}
	}
	if len(workspaces) != 2 || workspaces[0] != workspaces[1] {
		t.Errorf("both servers need the same -workspace, got %q", workspaces)
	}
}

// httpConfig is the part of a Cursor MCP config that reaches a server over HTTP.
type httpConfig struct {
	MCPServers map[string]struct {
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	} `json:"mcpServers"`
}

// TestCursorHTTPConfig reaches both servers, started as a user starts them (each generates its token), the way
// cursor/mcp.http.json says: the URL, and the token from the environment in the Authorization header (Cursor fills
// in ${env:NAME}). Without the header both refuse (the control).
func TestCursorHTTPConfig(t *testing.T) {
	bin, ws := t.TempDir(), t.TempDir()
	buildServers(t, bin)
	fsURL, fsToken := serve(t, filepath.Join(bin, "filesystem"), ws)
	execURL, execToken := serve(t, filepath.Join(bin, "executor"), ws)
	raw, err := os.ReadFile("cursor/mcp.http.json")
	if err != nil {
		t.Fatal(err)
	}
	filled := strings.NewReplacer("http://127.0.0.1:7101/mcp", fsURL, "http://127.0.0.1:7102/mcp", execURL,
		"${env:GOALBOX_FS_TOKEN}", fsToken, "${env:GOALBOX_EXEC_TOKEN}", execToken).Replace(string(raw))
	var cfg httpConfig
	if err := json.Unmarshal([]byte(filled), &cfg); err != nil {
		t.Fatal(err)
	}
	connect := func(name string, withHeaders bool) (*mcp.ClientSession, error) {
		srv := cfg.MCPServers[name]
		headers := srv.Headers
		if !withHeaders {
			headers = nil
		}
		hc := &http.Client{Transport: headerTransport(headers)}
		return mcp.NewClient(&mcp.Implementation{Name: "examples-test", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxRetries: -1}, nil)
	}
	for _, name := range []string{"goalbox-fs", "goalbox-exec"} {
		if _, err := connect(name, false); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("%s without the header: %v; want Unauthorized", name, err)
		}
	}
	fs, err := connect("goalbox-fs", true)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	exe, err := connect("goalbox-exec", true)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	callTool(t, fs, "sandbox_write_file", map[string]any{"path": "cursor.txt", "content": "over http"})
	if out := callTool(t, exe, "sandbox_run_command", map[string]any{"command": "cat cursor.txt"}); out["stdout"] != "over http" {
		t.Errorf("the executor read back %v", out)
	}
}

// headerTransport sends headers on every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}
