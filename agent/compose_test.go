package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// These tests build deploy/Dockerfile.fs and deploy/Dockerfile.exec, start deploy/compose.yaml as a user would
// (with a token and its own published ports), and use the stack from outside: a go-sdk MCP client writes a Python
// exercise through the filesystem container and runs its tests through the executor container, and the agent with
// a scripted model meets a goal against it. They are slow (image builds), so they run only with
// GOALBOX_COMPOSE_TEST=1; scripts/setup-docker.sh provides the engine, the base images and Compose.

// composeStack is a running deploy/compose.yaml project.
type composeStack struct {
	project         string
	fsURL, execURL  string
	token           string
	compose         func(args ...string) (string, error)
	containerByName map[string]string // service -> container ID
}

func requireCompose(t *testing.T) {
	t.Helper()
	if os.Getenv("GOALBOX_COMPOSE_TEST") != "1" {
		t.Skip("compose end-to-end test: set GOALBOX_COMPOSE_TEST=1 to build the images and run deploy/compose.yaml " +
			"(needs Docker and Compose v2: sudo scripts/setup-docker.sh)")
	}
	missing := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("compose end-to-end test: %s (CI=true, so this fails: run scripts/setup-docker.sh)", why)
		}
		t.Skipf("compose end-to-end test: %s; run sudo scripts/setup-docker.sh", why)
	}
	if _, err := exec.LookPath("docker"); err != nil {
		missing("no docker CLI on PATH")
	}
	if out, err := exec.Command("docker", "version", "--format", "{{.Server.APIVersion}}").CombinedOutput(); err != nil {
		missing("the Docker engine does not answer: " + strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("docker", "compose", "version").CombinedOutput(); err != nil {
		missing("no Docker Compose v2 plugin: " + strings.TrimSpace(string(out)))
	}
}

// freePort asks the kernel for a loopback port that is free now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// startCompose builds the images and brings the stack up, waiting for both health checks; the project is taken
// down with its volumes when the test ends, whatever happened. overrides are compose files applied over
// deploy/compose.yaml, env the variables they (and it) read.
func startCompose(t *testing.T, overrides []string, env ...string) *composeStack {
	t.Helper()
	requireCompose(t)
	file, err := filepath.Abs(filepath.Join("..", "deploy", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"-f", file}
	for _, o := range overrides {
		files = append(files, "-f", o)
	}
	s := &composeStack{project: "goalbox-e2e-" + randomHex(t, 4), token: randomHex(t, 16)}
	env = append(append(os.Environ(),
		"COMPOSE_BAKE=false", // build with the engine's BuildKit; buildx is not installed by setup-docker.sh
		"GOALBOX_TOKEN="+s.token,
		// Ports the Engine picks when it publishes them, read back once the stack is up: a port found free before
		// the build (minutes) could be taken by then by whatever runs beside.
		"GOALBOX_FS_PORT=0", "GOALBOX_EXEC_PORT=0",
	), env...)
	// Compose commands end a minute before the test binary's deadline, so that a slow image build fails the test
	// and the cleanup below still takes the stack down (a test binary that times out runs no cleanup).
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Minute))
		t.Cleanup(cancel)
	}
	s.compose = func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "docker", append(append(append([]string{"compose"}, files...), "-p", s.project), args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := s.compose("logs", "--no-color", "--tail", "100")
			t.Logf("compose logs:\n%s", logs)
		}
		down := exec.Command("docker", append(append(append([]string{"compose"}, files...), "-p", s.project), "down", "-v", "--remove-orphans", "--timeout", "5")...)
		down.Env = env
		if out, err := down.CombinedOutput(); err != nil {
			t.Errorf("compose down -v: %v\n%s", err, out)
		}
	})

	start := time.Now()
	if out, err := s.compose("build"); err != nil {
		t.Fatalf("compose build: %v\n%s", err, out)
	}
	t.Logf("compose build: %s", time.Since(start).Round(100*time.Millisecond))
	start = time.Now()
	if out, err := s.compose("up", "-d", "--wait", "--wait-timeout", "120"); err != nil {
		t.Fatalf("compose up --wait: %v\n%s", err, out)
	}
	t.Logf("compose up until both containers are healthy: %s", time.Since(start).Round(10*time.Millisecond))

	s.containerByName = map[string]string{}
	for _, svc := range []string{"filesystem", "executor"} {
		out, err := s.compose("ps", "-q", svc)
		if err != nil || strings.TrimSpace(out) == "" {
			t.Fatalf("compose ps -q %s: %v %q", svc, err, out)
		}
		s.containerByName[svc] = strings.TrimSpace(out)
	}
	published := func(service, port string) string {
		out, err := s.compose("port", service, port)
		addr := strings.TrimSpace(out)
		if err != nil || !strings.HasPrefix(addr, "127.0.0.1:") {
			t.Fatalf("compose port %s %s: %v %q", service, port, err, out)
		}
		return addr
	}
	s.fsURL = "http://" + published("filesystem", "7101") + protocol.EndpointPath
	s.execURL = "http://" + published("executor", "7102") + protocol.EndpointPath
	return s
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func connectMCP(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "goalbox-compose-test", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool that must succeed and decodes its structured result into out.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		t.Fatalf("%s(%v) is a tool error: %s", name, args, text.String())
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
}

func runCommand(t *testing.T, cs *mcp.ClientSession, cwd, command string) protocol.RunCommandOutput {
	t.Helper()
	var out protocol.RunCommandOutput
	callTool(t, cs, protocol.ToolRunCommand, protocol.RunCommandInput{Command: command, Cwd: cwd, TimeoutSeconds: 120}, &out)
	return out
}

const leapBuggy = "def leap_year(year):\n    return year % 4 == 0\n"

const leapTest = `from leap import leap_year


def test_common_year():
    assert not leap_year(2023)


def test_leap_year():
    assert leap_year(2024)


def test_century_is_not_leap():
    assert not leap_year(1900)


def test_fourth_century_is_leap():
    assert leap_year(2000)
`

func TestComposeStack(t *testing.T) {
	s := startCompose(t, nil)

	t.Run("containers are hardened as compose.yaml says", func(t *testing.T) {
		for svc, id := range s.containerByName {
			out, err := exec.Command("docker", "inspect", id).Output()
			if err != nil {
				t.Fatalf("docker inspect %s: %v", svc, err)
			}
			var info []struct {
				Config struct{ User string }
				State  struct {
					Health struct{ Status string }
				}
				HostConfig struct {
					ReadonlyRootfs bool
					CapDrop        []string
					SecurityOpt    []string
					Memory         int64
					PidsLimit      *int64
					PortBindings   map[string][]struct{ HostIp, HostPort string }
				}
			}
			if err := json.Unmarshal(out, &info); err != nil || len(info) != 1 {
				t.Fatalf("docker inspect %s: %v", svc, err)
			}
			c := info[0]
			if c.Config.User != "10001:10001" {
				t.Errorf("%s runs as %q, want 10001:10001", svc, c.Config.User)
			}
			if c.State.Health.Status != "healthy" {
				t.Errorf("%s health is %q", svc, c.State.Health.Status)
			}
			h := c.HostConfig
			if !h.ReadonlyRootfs || len(h.CapDrop) != 1 || h.CapDrop[0] != "ALL" ||
				!strings.Contains(strings.Join(h.SecurityOpt, ","), "no-new-privileges") ||
				h.Memory <= 0 || h.PidsLimit == nil || *h.PidsLimit <= 0 {
				t.Errorf("%s is not hardened: %+v", svc, h)
			}
			for port, binds := range h.PortBindings {
				for _, b := range binds {
					if b.HostIp != "127.0.0.1" {
						t.Errorf("%s publishes %s on %q, want 127.0.0.1 only", svc, port, b.HostIp)
					}
				}
			}
		}
	})

	t.Run("HTTP guards hold on the published ports", func(t *testing.T) {
		for _, url := range []string{s.fsURL, s.execURL} {
			health, err := http.Get(strings.TrimSuffix(url, protocol.EndpointPath) + protocol.HealthPath)
			if err != nil {
				t.Fatal(err)
			}
			health.Body.Close()
			if health.StatusCode != http.StatusOK {
				t.Errorf("%s: health answered %s", url, health.Status)
			}
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
			for _, tc := range []struct {
				name, host, token string
				want              int
			}{
				{"no token", "", "", http.StatusUnauthorized},
				{"wrong token", "", "nope", http.StatusUnauthorized},
				{"foreign Host (DNS rebinding)", "evil.example", s.token, http.StatusForbidden},
			} {
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if tc.host != "" {
					req.Host = tc.host
				}
				if tc.token != "" {
					req.Header.Set("Authorization", "Bearer "+tc.token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.want {
					t.Errorf("%s, %s: got %s, want %d", url, tc.name, resp.Status, tc.want)
				}
			}
		}
	})

	fs := connectMCP(t, s.fsURL, s.token)
	ex := connectMCP(t, s.execURL, s.token)

	t.Run("a Python exercise written through the filesystem server is tested through the executor", func(t *testing.T) {
		var w protocol.WriteFileOutput
		callTool(t, fs, protocol.ToolWriteFile, protocol.WriteFileInput{Path: "leap/leap.py", Content: leapBuggy}, &w)
		callTool(t, fs, protocol.ToolWriteFile, protocol.WriteFileInput{Path: "/workspace/leap/test_leap.py", Content: leapTest}, &w)

		// The tests are real: the buggy version fails exactly the century case.
		r := runCommand(t, ex, "leap", "python3 -m pytest -q -p no:cacheprovider")
		if r.ExitCode == 0 || !strings.Contains(r.Stdout, "1 failed, 3 passed") {
			t.Fatalf("pytest on the buggy solution: exit %d, want a failure with 1 failed, 3 passed:\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
		}

		var e protocol.EditFileOutput
		callTool(t, fs, protocol.ToolEditFile, protocol.EditFileInput{Path: "leap/leap.py",
			OldText: "return year % 4 == 0", NewText: "return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)"}, &e)
		if e.Replacements != 1 {
			t.Fatalf("edit made %d replacements", e.Replacements)
		}
		r = runCommand(t, ex, "leap", "python3 -m pytest -q")
		if r.ExitCode != 0 || !strings.Contains(r.Stdout, "4 passed") {
			t.Fatalf("pytest on the fixed solution: exit %d:\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
		}
	})

	t.Run("checkpoints are kept outside the workspace and restore it", func(t *testing.T) {
		var cp protocol.CheckpointOutput
		callTool(t, fs, protocol.ToolCheckpoint, protocol.CheckpointInput{Label: "compose"}, &cp)
		var w protocol.WriteFileOutput
		callTool(t, fs, protocol.ToolWriteFile, protocol.WriteFileInput{Path: "leap/leap.py", Content: "broken\n"}, &w)
		var r protocol.RestoreOutput
		callTool(t, fs, protocol.ToolRestore, protocol.RestoreInput{ID: cp.ID}, &r)
		var rd protocol.ReadFileOutput
		callTool(t, fs, protocol.ToolReadFile, protocol.ReadFileInput{Path: "leap/leap.py"}, &rd)
		if strings.Contains(rd.Content, "broken") {
			t.Errorf("the restore left the change: %q", rd.Content)
		}
		// The store is in the filesystem container's own volume, not in the workspace the executor shares.
		if out := runCommand(t, ex, ".", "ls -a /workspace; ls -d /checkpoints 2>&1; find / -name 'checkpoints' -path '*goalbox*' 2>/dev/null | head -3"); strings.Contains(out.Stdout, ".cache") {
			t.Errorf("a checkpoint store is inside the workspace: %s", out.Stdout)
		}
	})

	t.Run("both servers agree on file ownership", func(t *testing.T) {
		// The executor changes a file the filesystem server made, and makes one of its own. A command is uid 0 of
		// its user namespace, which is the container's 10001 outside: the file is its own.
		r := runCommand(t, ex, "leap", "id -u && stat -c %u leap.py && echo '# checked' >> leap.py && mkdir -p made-by-exec && echo hi > made-by-exec/note.txt")
		if r.ExitCode != 0 || !strings.HasPrefix(r.Stdout, "0\n0\n") {
			t.Fatalf("executor side: exit %d\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
		}
		// ...which the filesystem server reads, rewrites and deletes (pytest's cache folder too).
		var rd protocol.ReadFileOutput
		callTool(t, fs, protocol.ToolReadFile, protocol.ReadFileInput{Path: "leap/leap.py"}, &rd)
		if !strings.HasSuffix(rd.Content, "# checked\n") {
			t.Errorf("the filesystem server does not see the executor's change: %q", rd.Content)
		}
		var w protocol.WriteFileOutput
		callTool(t, fs, protocol.ToolWriteFile, protocol.WriteFileInput{Path: "leap/made-by-exec/note.txt", Content: "rewritten\n"}, &w)
		var d protocol.DeletePathOutput
		for _, p := range []string{"leap/made-by-exec", "leap/.pytest_cache"} {
			callTool(t, fs, protocol.ToolDeletePath, protocol.DeletePathInput{Path: p, Recursive: true}, &d)
			if !d.Deleted {
				t.Errorf("%s was not deleted", p)
			}
		}
	})

	t.Run("commands cannot change the image, read the servers' secrets or reach the network", func(t *testing.T) {
		r := runCommand(t, ex, ".", "touch /usr/local/bin/x 2>&1; echo rc=$?")
		if !strings.Contains(r.Stdout, "rc=1") {
			t.Errorf("writing into the image should fail: %s", r.Stdout)
		}
		// The token is in the executor server's environment; no process a command can see may give it away.
		r = runCommand(t, ex, ".", "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; env")
		if strings.Contains(r.Stdout+r.Stderr, s.token) {
			t.Errorf("a command read the server's token from the environment")
		}
		// Nor reach the network: not the filesystem container, not the executor's own published port.
		for _, target := range []string{"('filesystem', 7101)", "('127.0.0.1', 7102)"} {
			r = runCommand(t, ex, ".", "python3 -c \"import socket; socket.create_connection("+target+", timeout=5); print('connected')\"")
			if r.ExitCode == 0 || strings.Contains(r.Stdout, "connected") {
				t.Errorf("a command connected to %s: exit %d %s", target, r.ExitCode, r.Stdout)
			}
		}
	})

	t.Run("the agent with a scripted model meets a goal against the stack", func(t *testing.T) {
		model := looptest.New(t,
			looptest.Step{Calls: []looptest.Call{
				write("agent-e2e/add.py", "def add(a, b):\n    return a + b\n"),
				write("agent-e2e/test_add.py", "from add import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"),
			}},
			looptest.Step{Calls: []looptest.Call{command("cd agent-e2e && python3 -m pytest -q")}},
			looptest.Step{Content: "add.py is written and its test passes."},
		)
		r := runAgent(t, model, "", nil, "-goal", "write add(a, b) in agent-e2e/add.py with a pytest test",
			"-verify", "cd agent-e2e && python3 -m pytest -q",
			"-fs-url", s.fsURL, "-exec-url", s.execURL, "-token", s.token)
		r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
		// The work is in the compose volume, not in the agent's own -workspace.
		if _, err := os.Stat(filepath.Join(r.workspace, "agent-e2e")); err == nil {
			t.Errorf("the agent wrote into its local workspace instead of the stack's")
		}
		var rd protocol.ReadFileOutput
		callTool(t, fs, protocol.ToolReadFile, protocol.ReadFileInput{Path: "agent-e2e/add.py"}, &rd)
		if !bytes.Contains([]byte(rd.Content), []byte("return a + b")) {
			t.Errorf("agent-e2e/add.py in the stack: %q", rd.Content)
		}
	})
}
