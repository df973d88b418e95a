package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/assemble"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testLocalEnv, in the test binary's main mode, changes the local backend the automatic choice finds:
// "unusable" makes it fail to start, as on macOS or Windows; "no-namespaces" makes it start in its fallback mode
// without being asked to, as where the kernel or a container forbids namespaces.
const testLocalEnv = "EXECUTOR_TEST_LOCAL"

// localForTest is how the test binary's main mode builds the executor for testLocalEnv's mode.
func localForTest(mode string) []assemble.Option {
	switch mode {
	case "unusable":
		return []assemble.Option{assemble.WithLocalStarter(func(local.Config, *slog.Logger) (backend.Backend, error) {
			return nil, errors.New("local backend: made unusable by the test (" + testLocalEnv + "=unusable)")
		})}
	case "no-namespaces":
		return []assemble.Option{assemble.WithLocalStarter(func(cfg local.Config, logger *slog.Logger) (backend.Backend, error) {
			cfg.NoNamespaces = true
			return local.New(cfg, logger)
		})}
	}
	return nil
}

// autoHealth is what the automatic-choice tests read of /healthz.
type autoHealth struct {
	Backend       string               `json:"backend"`
	BackendChoice string               `json:"backend_choice"`
	BackendRule   protocol.BackendRule `json:"backend_rule"`
	BackendReason string               `json:"backend_reason"`
	Confinement   protocol.Confinement `json:"confinement"`
}

// startAuto starts the executor's main with env and args (a workspace and a cache of their own are added) and
// returns its health report and an MCP session, or its exit code and output when it exits first.
func startAuto(t *testing.T, ws string, env []string, args ...string) (h autoHealth, cs *mcp.ClientSession, code int, out string) {
	t.Helper()
	logs, err := os.CreateTemp(t.TempDir(), "executor-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	cmd := executor(t, env, append([]string{"-workspace", ws, "-addr", mcptest.AnyPort, "-cache-dir", filepath.Join(openDir(t), "cache")}, args...)...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	readLogs := func() string { b, _ := os.ReadFile(logs.Name()); return string(b) }
	var addr string
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-done:
			done <- err // for the cleanup
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return h, nil, ee.ExitCode(), readLogs()
			}
			return h, nil, 0, readLogs()
		default:
		}
		if addr = mcptest.ServingAddr(readLogs()); addr != "" {
			if resp, err := http.Get("http://" + addr + protocol.HealthPath); err == nil {
				err = json.NewDecoder(resp.Body).Decode(&h)
				resp.Body.Close()
				if err == nil {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the executor neither served nor exited:\n%s", readLogs())
		}
	}
	cs, err = mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + protocol.EndpointPath, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return h, cs, -1, readLogs()
}

// runIn runs command through the session and returns its stdout.
func runIn(t *testing.T, cs *mcp.ClientSession, command string) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolRunCommand, Arguments: protocol.RunCommandInput{Command: command}})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", command, err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out protocol.RunCommandOutput
	if err := json.Unmarshal(b, &out); err != nil || out.ExitCode != 0 {
		t.Fatalf("%s: %v %s", command, err, b)
	}
	return out.Stdout
}

// openDir is a fresh folder that every user may pass through, as the local backend's fallback needs for its
// workspace and cache (it has no mount namespace to bridge a closed folder).
func openDir(t *testing.T) string {
	d := t.TempDir()
	for _, p := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// plainWorkspace is a workspace owned by an unprivileged user, which the docker backend needs (commands never run
// as root, and by default run as the workspace's owner).
func plainWorkspace(t *testing.T) string {
	ws := openDir(t)
	if os.Getuid() == 0 {
		if err := os.Chown(ws, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// TestMainAutoChoosesLocal: with no -backend, where the local backend gets namespaces (this Linux machine), the
// executor takes it and says so in /healthz.
func TestMainAutoChoosesLocal(t *testing.T) {
	h, cs, code, out := startAuto(t, t.TempDir(), nil)
	if cs == nil {
		t.Fatalf("exited %d:\n%s", code, out)
	}
	if h.Backend != "local" || h.BackendChoice != "auto" || h.BackendRule != protocol.RuleNamespaces ||
		h.Confinement.LocalConfinement == nil || h.Confinement.Mode != protocol.IsolationPIDNamespace {
		t.Errorf("health: %+v", h)
	}
	if !strings.Contains(out, `"msg":"backend chosen","backend":"local","requested":"auto"`) {
		t.Errorf("the choice is not logged:\n%s", out)
	}
	// A command sees its own PID namespace: its shell is PID 1 or 2 there.
	if pid := strings.TrimSpace(runIn(t, cs, "echo $$")); pid != "1" && pid != "2" {
		t.Errorf("the command's shell is PID %s: not in a PID namespace of its own", pid)
	}
	// Explicit is reported as such.
	h, cs, code, out = startAuto(t, t.TempDir(), nil, "-backend", "local")
	if cs == nil || h.Backend != "local" || h.BackendChoice != "explicit" || h.BackendRule != protocol.RuleAsked {
		t.Errorf("explicit local: exit %d, health %+v\n%s", code, h, out)
	}
}

// TestMainAutoChoosesDocker: where the local backend cannot run (as on macOS) or would run without namespaces (a
// container, a locked-down kernel) and a Docker Engine answers, the executor takes the docker backend, and a
// command runs in a container.
func TestMainAutoChoosesDocker(t *testing.T) {
	_, image := dockerForMain(t)
	for _, mode := range []string{"unusable", "no-namespaces"} {
		t.Run(mode, func(t *testing.T) {
			h, cs, code, out := startAuto(t, plainWorkspace(t), []string{testLocalEnv + "=" + mode}, "-image", image)
			if cs == nil {
				t.Fatalf("exited %d:\n%s", code, out)
			}
			if h.Backend != "docker" || h.BackendChoice != "auto" || h.BackendRule != protocol.RuleDocker ||
				h.Confinement.DockerConfinement == nil || h.Confinement.Image != image {
				t.Errorf("health: %+v", h)
			}
			// The command runs in a container as the workspace's owner, the host name the network holder's.
			if got := runIn(t, cs, "echo $(id -u) $(hostname) > made-in.txt; cat made-in.txt"); strings.TrimSpace(got) != "4242 sandbox" {
				t.Errorf("command ran as/at %q, want 4242 sandbox", got)
			}
		})
	}
	// The engine answers but the image is missing: the docker backend's error (how to get the image) is the
	// message when nothing else confines; the local fallback, which does, is taken with that error in the reason.
	missing := "goalbox/no-such-image:never"
	_, cs, code, out := startAuto(t, plainWorkspace(t), []string{testLocalEnv + "=unusable"}, "-image", missing)
	if cs != nil || code != 2 || !strings.Contains(out, "no backend can run commands here") ||
		!strings.Contains(out, "image "+missing+" not found locally") || !strings.Contains(out, "docker pull "+missing) {
		t.Errorf("local unusable, image missing: want exit 2 with the docker backend's error, got %d:\n%s", code, out)
	}
	h, cs, code, out := startAuto(t, openDir(t), []string{testLocalEnv + "=no-namespaces"}, "-image", missing)
	if cs == nil || h.Backend != "local" || h.BackendRule != protocol.RuleFallback {
		t.Errorf("local without namespaces, image missing: want the fallback, got exit %d, health %+v\n%s", code, h, out)
	}
	// -no-namespaces given with auto is the user's choice of the local fallback, even with Docker there.
	h, cs, code, out = startAuto(t, openDir(t), nil, "-no-namespaces", "-image", image)
	if cs == nil || h.Backend != "local" || h.BackendRule != protocol.RuleFallbackAsked {
		t.Errorf("-no-namespaces: exit %d, health %+v\n%s", code, h, out)
	}
}

// TestMainAutoWithoutDocker: with no Docker Engine (DOCKER_HOST at a socket that does not exist), a local backend
// without namespaces is taken in its fallback mode, which still confines here (Landlock); a local backend that
// cannot run at all (as on macOS) leaves nothing: exit 2 with a message that says what to install.
func TestMainAutoWithoutDocker(t *testing.T) {
	noDocker := "DOCKER_HOST=unix:///nonexistent/docker.sock"
	t.Run("fallback", func(t *testing.T) {
		h, cs, code, out := startAuto(t, openDir(t), []string{noDocker, testLocalEnv + "=no-namespaces"})
		if cs == nil {
			t.Fatalf("exited %d:\n%s", code, out)
		}
		if h.Confinement.LocalConfinement == nil || h.Confinement.Landlock != protocol.LandlockEnforced {
			ciskip.Skipf(t, "no Landlock here, so the fallback does not confine and is not chosen: %+v", h)
		}
		if h.Backend != "local" || h.BackendChoice != "auto" || h.BackendRule != protocol.RuleFallback ||
			h.Confinement.Mode != protocol.IsolationSubreaperInit {
			t.Errorf("health: %+v", h)
		}
	})
	t.Run("none", func(t *testing.T) {
		_, cs, code, out := startAuto(t, t.TempDir(), []string{noDocker, testLocalEnv + "=unusable"})
		if cs != nil || code != 2 {
			t.Fatalf("want exit 2, got %d (serving: %v):\n%s", code, cs != nil, out)
		}
		for _, want := range []string{"-backend auto: no backend can run commands here", "made unusable by the test",
			"no Docker Engine answers at unix:///nonexistent/docker.sock", "install and start a Docker Engine",
			"`docker build -f deploy/Dockerfile.exec -t goalbox/executor:latest .`"} {
			if !strings.Contains(out, want) {
				t.Errorf("the message does not say %q:\n%s", want, out)
			}
		}
	})
}
