package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// asMainEnv makes the test binary run the executor's main with the arguments that follow "--".
const asMainEnv = "EXECUTOR_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		args := []string{"executor"}
		for i, a := range os.Args {
			if a == "--" {
				args = append(args, os.Args[i+1:]...)
				break
			}
		}
		os.Exit(mcpserve.ExitCode("executor", run(args, localForTest(os.Getenv(testLocalEnv))...), os.Stderr))
	}
	os.Exit(m.Run())
}

// executor starts the executor's main as a process. Its HTTP endpoint takes no token (-token none) unless env
// says something of GOALBOX_EXEC_TOKEN: most tests here are about other things, TestMainTokenByDefault about that.
func executor(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(append(os.Environ(), asMainEnv+"=1"), env...)
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "GOALBOX_EXEC_TOKEN") }) && !slices.Contains(args, "-token") {
		cmd.Env = append(cmd.Env, "GOALBOX_EXEC_TOKEN=none")
	}
	return cmd
}

func TestMainRefusesBadConfiguration(t *testing.T) {
	ws := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-workspace", ws, "-backend", "chroot"}, `unknown backend "chroot": use auto, local or docker`},
		{[]string{"-backend", "local"}, "no workspace"},
		{[]string{"-workspace", ws, "-output-cap", "5000000"}, "must be between"},
		{[]string{"-workspace", ws, "-output-budget", "1000"}, "output budget 1000 bytes: must be at least 2097152 (2 MiB), or -1"},
		{[]string{"-workspace", ws, "-output-budget", "8388608", "-output-total", "4194304"}, "must be at least the per-session output budget, 8388608 bytes"},
		{[]string{"-workspace", ws, "-timeout-default", "1h", "-timeout-max", "10m"}, "at least the default timeout"},
		{[]string{"-workspace", ws, "-allow", "("}, "allow pattern"},
		{[]string{"-workspace", ws, "-backend", "docker", "-image", "goalbox/no-such-image:never"}, "docker backend"},
		{[]string{"-workspace", ws, "-backend", "docker", "-image", "busybox:latest", "-docker-user", "0"}, `user "0" is root`},
		{[]string{"-workspace", ws, "stray"}, "unexpected arguments"},
	}
	for _, c := range cases {
		out, err := executor(t, []string{"GOALBOX_EXEC_CACHE_DIR=" + t.TempDir()}, c.args...).CombinedOutput()
		var ee *exec.ExitError
		if !errorsAs(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%v: want exit 2, got %v\n%s", c.args, err, out)
		}
		if !strings.Contains(string(out), c.want) {
			t.Errorf("%v: output does not say %q:\n%s", c.args, c.want, out)
		}
	}
}

func errorsAs(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*ee = e
	}
	return ok
}

// TestMainServesAndShutsDown runs the executor as its own process, configured from the environment, with a secret
// in that environment: a command cannot see it, health reports the confinement, SIGTERM shuts down cleanly.
func TestMainServesAndShutsDown(t *testing.T) {
	ws := t.TempDir()
	cmd := executor(t, []string{
		"GOALBOX_EXEC_WORKSPACE=" + ws, "GOALBOX_EXEC_ADDR=" + mcptest.AnyPort, "GOALBOX_EXEC_CACHE_DIR=" + t.TempDir(),
		"GOALBOX_EXEC_DENY=^rm\n^curl", "OPENAI_API_KEY=sk-test-never-leaks", "GOALBOX_EXEC_ADVERTISED_ROOT=/sandbox",
	})
	logs := &syncLines{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	var health map[string]any
	var addr string
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		if addr = mcptest.ServingAddr(logs.String()); addr != "" {
			var resp *http.Response
			if resp, err = http.Get("http://" + addr + protocol.HealthPath); err == nil {
				err = json.NewDecoder(resp.Body).Decode(&health)
				resp.Body.Close()
				if err == nil {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no health endpoint: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if health["backend"] != "local" || fmt.Sprint(health["policy"]) == "" {
		t.Errorf("health: %v", health)
	}

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + protocol.EndpointPath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolRunCommand,
		Arguments: protocol.RunCommandInput{Command: "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; echo done"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	text, _ := json.Marshal(res.StructuredContent)
	if strings.Contains(string(text), "sk-test-never-leaks") || !strings.Contains(string(text), "done") {
		t.Errorf("command output: %s", text)
	}
	// The advertised root from the environment: cwd /sandbox is the workspace, /workspace is now outside.
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolRunCommand, Arguments: protocol.RunCommandInput{Command: "pwd", Cwd: "/sandbox"}})
	if err != nil || res.IsError || !strings.Contains(fmt.Sprint(res.StructuredContent), ws) {
		t.Errorf("cwd under the advertised root: %v %+v", err, res)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolRunCommand, Arguments: protocol.RunCommandInput{Command: "pwd", Cwd: "/workspace"}})
	if err != nil || !res.IsError {
		t.Errorf("cwd /workspace with the root advertised as /sandbox: %v %+v", err, res)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolRunCommand, Arguments: protocol.RunCommandInput{Command: "rm -f x"}})
	if err != nil || !res.IsError {
		t.Errorf("deny pattern from the environment not applied: %v %+v", err, res)
	}
	cs.Close()

	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("no exit after SIGTERM\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "local backend confinement") {
		t.Errorf("start-up log lacks the confinement:\n%s", logs.String())
	}
}

// TestMainServerCrashKillsCommands kills the server with SIGKILL while a command runs (with a background child and
// a setsid child): nothing the command started may outlive the server, in either mode.
func TestMainServerCrashKillsCommands(t *testing.T) {
	for _, mode := range []string{"namespaces", "no-namespaces"} {
		t.Run(mode, func(t *testing.T) {
			// Commands run as an unprivileged user, who must pass through the test's folder in the fallback.
			ws, cache := t.TempDir(), t.TempDir()
			_ = os.Chmod(filepath.Dir(ws), 0o711)
			args := []string{"-workspace", ws, "-addr", mcptest.AnyPort, "-cache-dir", cache}
			if mode == "no-namespaces" {
				args = append(args, "-no-namespaces")
			}
			cmd := executor(t, nil, args...)
			logs := &syncLines{}
			cmd.Stderr = logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			var cs *mcp.ClientSession
			var err error
			deadline := time.Now().Add(20 * time.Second)
			for {
				if addr := mcptest.ServingAddr(logs.String()); addr != "" {
					cs, err = mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(),
						&mcp.StreamableClientTransport{Endpoint: "http://" + addr + protocol.EndpointPath, MaxRetries: -1}, nil)
					if err == nil {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("the executor did not serve: %v\n%s", err, logs.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			marker := fmt.Sprintf("7%d", time.Now().UnixNano()%1e9)
			go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolRunCommand, Arguments: protocol.RunCommandInput{
				Command: fmt.Sprintf("sleep %[1]s.1 & setsid sleep %[1]s.2 & sleep %[1]s.3", marker)}})
			deadline = time.Now().Add(20 * time.Second) // the command's own, not what the start left of the server's
			for len(markedProcesses(marker)) < 3 {
				if time.Now().After(deadline) {
					t.Fatalf("the command did not start: %v", markedProcesses(marker))
				}
				time.Sleep(20 * time.Millisecond)
			}
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			deadline = time.Now().Add(5 * time.Second)
			for len(markedProcesses(marker)) > 0 {
				if time.Now().After(deadline) {
					ps, _ := exec.Command("ps", "-eo", "pid,ppid,pgid,sid,stat,args").Output()
					var lines []string
					for _, l := range strings.Split(string(ps), "\n") {
						if strings.Contains(l, marker) || strings.Contains(l, "goalbox-exec-init") {
							lines = append(lines, l)
						}
					}
					t.Fatalf("processes outlived the killed server: %v\n%s", markedProcesses(marker), strings.Join(lines, "\n"))
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// markedProcesses lists the live host processes whose command line contains marker.
func markedProcesses(marker string) []string {
	ents, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), marker) || e.Name() == fmt.Sprint(os.Getpid()) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
			continue
		}
		found = append(found, e.Name()+":"+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return found
}

// TestMainRestartCleansUp: an executor killed with SIGKILL cannot remove its private temp folder and its cgroups;
// the next one to start over the same cache folder removes them, and leaves a live executor's alone.
func TestMainRestartCleansUp(t *testing.T) {
	ws, cache := t.TempDir(), t.TempDir()
	_ = os.Chmod(filepath.Dir(ws), 0o711)
	start := func() *exec.Cmd {
		cmd := executor(t, nil, "-workspace", ws, "-addr", mcptest.AnyPort, "-cache-dir", cache)
		logs := &syncLines{}
		cmd.Stderr = logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if addr := mcptest.ServingAddr(logs.String()); addr != "" {
				if resp, err := http.Get("http://" + addr + protocol.HealthPath); err == nil {
					resp.Body.Close()
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the executor did not start:\n%s", logs.String())
			}
		}
		return cmd
	}
	leftBy := func(pid int) []string {
		tmp, _ := filepath.Glob(filepath.Join(cache, "ws-*", "tmp", fmt.Sprintf("%d-*", pid)))
		// Under each controller's root, or under the server's own cgroup a level or two down.
		for _, pattern := range []string{"/sys/fs/cgroup/*/goalbox-exec-%d-*", "/sys/fs/cgroup/*/*/goalbox-exec-%d-*", "/sys/fs/cgroup/*/*/*/goalbox-exec-%d-*"} {
			cg, _ := filepath.Glob(fmt.Sprintf(pattern, pid))
			tmp = append(tmp, cg...)
		}
		return tmp
	}
	first := start()
	if len(leftBy(first.Process.Pid)) == 0 {
		t.Fatal("the executor made no temp folder or cgroup to leave behind")
	}
	_ = first.Process.Kill()
	_ = first.Wait()
	left := leftBy(first.Process.Pid)
	if len(left) == 0 {
		t.Fatal("positive control: a killed executor left nothing behind")
	}
	second := start()
	if still := leftBy(first.Process.Pid); len(still) > 0 {
		t.Errorf("a new executor left what the killed one left: %v", still)
	}
	if len(leftBy(second.Process.Pid)) == 0 {
		t.Errorf("the live executor's own temp folder is gone")
	}
	t.Logf("removed after the restart: %v", left)
}
