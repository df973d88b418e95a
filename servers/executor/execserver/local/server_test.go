//go:build linux

package local

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/cgroup"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/rootfs"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioServerEnv makes the test binary serve an executor on stdin/stdout over the workspace it names (TestStdio).
const stdioServerEnv = "EXECSERVER_TEST_STDIO_WORKSPACE"

func TestMain(m *testing.M) {
	if ws := os.Getenv(stdioServerEnv); ws != "" {
		os.Exit(serveStdioForTest(ws))
	}
	os.Exit(m.Run())
}

func serveStdioForTest(ws string) int {
	g, err := pathguard.Open(ws, pathguard.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	b, err := New(Config{Workspace: g.Dir(), CacheDir: filepath.Join(filepath.Dir(g.Dir()), "cache")}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer b.Close()
	ex, err := execserver.New(execserver.Config{}, b, g, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	logger, _ := mcpserve.NewLogger("error")
	if err := mcpserve.Run(context.Background(), ex.Server(), execserver.Name, mcpserve.Config{Stdio: true, Workspace: ws}, ex.Health, logger); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// localServer is the usual fixture: the local backend behind a real MCP server on loopback HTTP.
func localServer(t *testing.T, cfg execserver.Config, opts *mcp.ClientOptions) (*sandboxtest.Server, string) {
	t.Helper()
	b, ws := newLocalTestBackend(t, nil)
	return sandboxtest.StartServer(t, b, ws, cfg, opts), ws
}

func TestRunBasics(t *testing.T) {
	for _, noNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-namespaces=%v", noNS), func(t *testing.T) {
			modeWanted(t, noNS)
			b, ws := newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = noNS })
			runBasics(t, sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil).Session, ws)
		})
	}
}

func runBasics(t *testing.T, cs *mcp.ClientSession, ws string) {

	out := sandboxtest.MustRun(t, cs, protocol.RunCommandInput{Command: "echo hello; echo oops >&2"})
	if out.ExitCode != 0 || out.Stdout != "hello\n" || out.Stderr != "oops\n" || out.TimedOut || out.StdoutTruncated || out.StderrTruncated {
		t.Errorf("echo: %+v", out)
	}

	out = sandboxtest.MustRun(t, cs, protocol.RunCommandInput{Command: "echo partial; exit 3"})
	if out.ExitCode != 3 || out.Stdout != "partial\n" {
		t.Errorf("exit 3 is a normal result: %+v", out)
	}

	out = sandboxtest.MustRun(t, cs, protocol.RunCommandInput{Command: "tr a-z A-Z", Stdin: "shout\n"})
	if out.Stdout != "SHOUT\n" {
		t.Errorf("stdin: %+v", out)
	}
	big := strings.Repeat("x", 3<<20)
	out = sandboxtest.MustRun(t, cs, protocol.RunCommandInput{Command: "wc -c", Stdin: big})
	if strings.TrimSpace(out.Stdout) != strconv.Itoa(len(big)) {
		t.Errorf("3 MiB of stdin: wc says %q", out.Stdout)
	}
	// A command that does not read its stdin still ends.
	out = sandboxtest.MustRun(t, cs, protocol.RunCommandInput{Command: "true", Stdin: big})
	if out.ExitCode != 0 {
		t.Errorf("unread stdin: %+v", out)
	}

	// The command reaches the shell byte for byte, as sh -c would get it (the namespace mode hands it over on the
	// sandbox's stdin, ahead of the command's own stdin, which must arrive untouched).
	for _, c := range []struct{ command, stdin, want string }{
		{"printf '%s|' \"$0\" \"$#\" \"${OLDPWD-unset}\"", "", "sh|0|unset|"},
		{"  printf '[%s]' 'a  b' \\\n  'c\\d'  ", "", "[a  b][c\\d]"},
		{"cat <<'EOF'\n\n  x \\\n\nEOF\n\n", "", "\n  x \\\n\n"},
		{"printf '%s' \"$(cat)\"", "2 2\n/\n\nnot a command\n", "2 2\n/\n\nnot a command"},
		{"IFS= read -r a; IFS= read -r b; printf '<%s><%s>' \"$a\" \"$b\"", " 1 1\n\tx", "< 1 1><\tx>"},
		{"echo unterminated \\", "", "unterminated \\\n"},
	} {
		out = sandboxtest.MustRun(t, cs, protocol.RunCommandInput{Command: c.command, Stdin: c.stdin})
		if out.ExitCode != 0 || out.Stdout != c.want {
			t.Errorf("command %q with stdin %q: got %+v, want stdout %q", c.command, c.stdin, out, c.want)
		}
	}
	// A working folder the shell would split or expand: spaces, $, quotes, a semicolon, an ampersand.
	odd := "two  words $x 'q' ;&"
	if err := os.Mkdir(filepath.Join(ws, odd), 0o755); err != nil {
		t.Fatal(err)
	}
	out = sandboxtest.MustRun(t, cs, protocol.RunCommandInput{Command: "pwd", Cwd: odd})
	if want := filepath.Join(ws, odd) + "\n"; out.Stdout != want {
		t.Errorf("a working folder with spaces, $, quotes, ; and &: pwd = %q, want %q", out.Stdout, want)
	}
	// A newline in a name is one of the characters refused on every platform (pkg/pathguard/names.go), even where
	// the folder exists.
	if err := os.Mkdir(filepath.Join(ws, "two\nlines"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, msg := sandboxtest.Call[protocol.RunCommandOutput](t, cs, protocol.ToolRunCommand, protocol.RunCommandInput{Command: "pwd", Cwd: "two\nlines"}); !strings.Contains(msg, "invalid path") {
		t.Errorf("a working folder with a newline: %q, want a refusal (invalid path)", msg)
	}

	// The workspace is the working folder and the command's files land in it.
	out = sandboxtest.MustRun(t, cs, protocol.RunCommandInput{Command: "pwd; mkdir -p sub/deeper; echo made > sub/f.txt"})
	if strings.TrimSpace(out.Stdout) != ws {
		t.Errorf("pwd = %q, want the workspace %s", out.Stdout, ws)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "sub/f.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("file written by the command: %q %v", b, err)
	}
	for _, cwd := range []string{"sub", "sub/deeper/", "/workspace/sub", ws + "/sub", "./sub/../sub"} {
		out = sandboxtest.MustRun(t, cs, protocol.RunCommandInput{Command: "pwd", Cwd: cwd})
		if want := filepath.Join(ws, "sub"); !strings.HasPrefix(strings.TrimSpace(out.Stdout), want) {
			t.Errorf("cwd %q: pwd = %q, want under %s", cwd, out.Stdout, want)
		}
	}
	if out.DurationMs < 0 || out.DurationMs > 10_000 {
		t.Errorf("duration_ms %d", out.DurationMs)
	}

	// The environment is the allowlist: the build caches are private and outside the workspace.
	out = sandboxtest.MustRun(t, cs, protocol.RunCommandInput{Command: "echo $HOME; echo $TMPDIR; echo $GOCACHE; echo $TERM; mkdir -p $GOCACHE && touch $TMPDIR/t $HOME/h $GOCACHE/.x && echo writable"})
	lines := strings.Split(strings.TrimSpace(out.Stdout), "\n")
	if len(lines) != 5 || lines[3] != "dumb" || lines[4] != "writable" {
		t.Fatalf("environment: %+v", out)
	}
	for _, p := range lines[:3] {
		if rootfs.Within(p, ws) || !filepath.IsAbs(p) {
			t.Errorf("private folder %q must be outside the workspace", p)
		}
	}
}

func TestRunLanguagesWork(t *testing.T) {
	// A cache that outlives the test, so that only the first run builds Go's standard library.
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skip("no user cache folder")
	}
	if os.Geteuid() == 0 {
		// Commands run as DefaultRunAsUID, who must pass through the cache folder's parents in the fallback.
		cache = "/var/cache"
	}
	for _, noNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-namespaces=%v", noNS), func(t *testing.T) {
			b, ws := newLocalTestBackend(t, func(c *Config) { c.CacheDir = filepath.Join(cache, "goalbox-exec-test"); c.NoNamespaces = noNS })
			languagesWork(t, sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil), noNS)
		})
	}
}

// languagesWork runs a small program in each language whose toolchain is installed here. In the fallback mode of a
// root server a toolchain behind a folder closed to the run-as user (/root/.pyenv behind /root) cannot be reached:
// no mount namespace bridges it (documented); those are skipped with a note.
func languagesWork(t *testing.T, srv *sandboxtest.Server, fallback bool) {
	// The toolchains on the server's PATH work inside the sandbox, with private caches.
	cases := map[string]string{
		"python3": `python3 -c 'import sys; print(sys.version_info[0])'`,
		"go":      `printf 'package main\nfunc main() { println("go-ok") }\n' > m.go && go run m.go 2>&1 && mkdir -p gomod && cd gomod && printf 'module m\n' > go.mod && printf 'package m\nimport "testing"\nfunc TestX(t *testing.T) {}\n' > m_test.go && go test ./... 2>&1`,
		"node":    `node -e 'console.log("node-" + (1+1))'`,
		"javac":   `printf 'class H { public static void main(String[] a) { System.out.println("java-ok"); } }' > H.java && javac H.java && java H`,
		"g++":     `printf '#include <iostream>\nint main() { std::cout << "cpp-ok\\n"; }\n' > h.cpp && g++ -o h h.cpp && ./h`,
		"cargo":   `cargo --version && rustc --version && echo rust-ok`,
	}
	want := map[string]string{"python3": "3", "go": "go-ok", "node": "node-2", "javac": "java-ok", "g++": "cpp-ok", "cargo": "rust-ok"}
	for tool, cmd := range cases {
		path, err := exec.LookPath(tool)
		if err != nil {
			t.Logf("%s not installed here; skipped", tool)
			continue
		}
		if real, err := filepath.EvalSymlinks(path); err == nil && fallback && os.Geteuid() == 0 {
			if c := rootfs.ClosedAncestor(real, DefaultRunAsUID, DefaultRunAsUID); c != "" {
				t.Logf("%s (%s) is behind %s, closed to the run-as user, and nothing bridges it without namespaces; skipped", tool, real, c)
				continue
			}
		}
		out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: cmd, TimeoutSeconds: 120})
		if out.ExitCode != 0 || !strings.Contains(out.Stdout, want[tool]) {
			t.Errorf("%s: %+v", tool, out)
		}
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	srv, ws := localServer(t, execserver.Config{DefaultTimeout: 10 * time.Second, MaxTimeout: 60 * time.Second}, nil)
	cs := srv.Session
	if err := os.WriteFile(filepath.Join(ws, "file.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		in   protocol.RunCommandInput
		want string
	}{
		{protocol.RunCommandInput{Command: ""}, "command is empty"},
		{protocol.RunCommandInput{Command: "  \n\t"}, "command is empty"},
		{protocol.RunCommandInput{Command: "echo a\x00b"}, "NUL byte"},
		{protocol.RunCommandInput{Command: strings.Repeat("x", 200<<10)}, "the most sh -c can take is"},
		{protocol.RunCommandInput{Command: "true", TimeoutSeconds: -1}, "give 1 to 60"},
		{protocol.RunCommandInput{Command: "true", TimeoutSeconds: 61}, "give 1 to 60"},
		{protocol.RunCommandInput{Command: "true", Cwd: ".."}, "outside the workspace"},
		{protocol.RunCommandInput{Command: "true", Cwd: "../../etc"}, "outside the workspace"},
		{protocol.RunCommandInput{Command: "true", Cwd: "/etc"}, "outside the workspace"},
		{protocol.RunCommandInput{Command: "true", Cwd: ws + "_evil"}, "outside the workspace"},
		{protocol.RunCommandInput{Command: "true", Cwd: "out"}, "outside the workspace"},
		{protocol.RunCommandInput{Command: "true", Cwd: "missing"}, "does not exist"},
		{protocol.RunCommandInput{Command: "true", Cwd: "file.txt"}, "not a folder"},
		{protocol.RunCommandInput{Command: "true", Cwd: "a\x00b"}, "NUL"},
	}
	for _, c := range cases {
		msg := sandboxtest.ToolError(t, cs, c.in)
		if !strings.Contains(msg, c.want) {
			t.Errorf("%q (cwd %q, timeout %d): message %q does not say %q", trunc(c.in.Command), c.in.Cwd, c.in.TimeoutSeconds, msg, c.want)
		}
		if strings.Contains(msg, filepath.Dir(ws)+"/") && !strings.Contains(msg, ws) {
			t.Errorf("message names a host path outside the workspace: %q", msg)
		}
	}
	// Wrong types are refused by the schema, and the server keeps serving.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolRunCommand, Arguments: map[string]any{"command": 42}})
	if err == nil && !res.IsError {
		t.Errorf("command of type number accepted")
	}
	if out := sandboxtest.MustRun(t, cs, protocol.RunCommandInput{Command: "echo still here"}); out.Stdout != "still here\n" {
		t.Errorf("after bad input: %+v", out)
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func TestRunTimeoutKillsTree(t *testing.T) {
	srv, _ := localServer(t, execserver.Config{}, nil)
	marker := fmt.Sprintf("9%d", time.Now().UnixNano()%1e9)
	start := time.Now()
	out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{
		Command:        fmt.Sprintf("echo before; sleep %s.1 & setsid sleep %s.2 & while :; do :; done", marker, marker),
		TimeoutSeconds: 1,
	})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a 1 s timeout took %v", took)
	}
	if out.ExitCode != -1 || !out.TimedOut || out.Stdout != "before\n" {
		t.Errorf("timeout: %+v", out)
	}
	if left := sandboxtest.ProcessesWith(marker); len(left) > 0 {
		t.Errorf("processes left after the timeout: %v", left)
	}
}

func TestRunOutputCap(t *testing.T) {
	srv, _ := localServer(t, execserver.Config{OutputCap: 4096}, nil)
	out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "seq 1 100000; seq 1 3 >&2"})
	full, _ := exec.Command("seq", "1", "100000").Output()
	if !out.StdoutTruncated || out.StderrTruncated || out.Stderr != "1\n2\n3\n" {
		t.Fatalf("flags: stdout_truncated %v stderr_truncated %v stderr %q", out.StdoutTruncated, out.StderrTruncated, out.Stderr)
	}
	m := regexp.MustCompile(`\n\[\.\.\. (\d+) bytes left out \.\.\.\]\n`).FindStringSubmatchIndex(out.Stdout)
	if m == nil {
		t.Fatalf("no marker in %q", out.Stdout)
	}
	head, tail := out.Stdout[:m[0]], out.Stdout[m[1]:]
	omitted, _ := strconv.Atoi(out.Stdout[m[2]:m[3]])
	if len(head)+len(tail) > 4096 || len(head) < 2000 || len(tail) < 2000 {
		t.Errorf("kept %d head + %d tail bytes of a 4096 cap", len(head), len(tail))
	}
	if !strings.HasPrefix(string(full), head) || !strings.HasSuffix(string(full), tail) {
		t.Errorf("head or tail is not the real output's")
	}
	if len(head)+omitted+len(tail) != len(full) {
		t.Errorf("marker says %d left out; %d + %d + %d != %d", omitted, len(head), omitted, len(tail), len(full))
	}
}

func TestRunProgressNotifications(t *testing.T) {
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	srv, _ := localServer(t, execserver.Config{}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
		},
	})
	params := &mcp.CallToolParams{Name: protocol.ToolRunCommand, Arguments: protocol.RunCommandInput{Command: "echo working; sleep 2.6; echo done", TimeoutSeconds: 30}}
	params.SetProgressToken("tok-1")
	res, err := srv.Session.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 2 {
		t.Fatalf("got %d progress notifications for a 2.6 s command, want at least 2", len(got))
	}
	for i, p := range got {
		if p.ProgressToken != "tok-1" || p.Total != 30 || !strings.Contains(p.Message, "bytes on stdout") {
			t.Errorf("notification %d: %+v", i, p)
		}
		if i > 0 && p.Progress <= got[i-1].Progress {
			t.Errorf("progress does not increase: %v then %v", got[i-1].Progress, p.Progress)
		}
	}
	if !strings.Contains(got[0].Message, "8 bytes on stdout") {
		t.Errorf("first notification should count the 8 bytes printed: %q", got[0].Message)
	}

	// Without a token, no notifications.
	n := len(got)
	mu.Unlock()
	sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "sleep 1.5"})
	mu.Lock()
	if len(got) != n {
		t.Errorf("notifications sent without a progress token")
	}
}

func TestRunCancelKillsTree(t *testing.T) {
	for _, mode := range []struct {
		name         string
		noNamespaces bool
	}{{"pid-namespace", false}, {"process-group", true}} {
		t.Run(mode.name, func(t *testing.T) {
			b, ws := newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = mode.noNamespaces })
			srv := sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil)
			marker := fmt.Sprintf("8%d", time.Now().UnixNano()%1e9)
			// The pid file holds host pids only without a PID namespace; the marker finds the processes either way.
			cmd := fmt.Sprintf("sleep %[1]s.1 & echo $! > pids; setsid sleep %[1]s.2 & echo $! >> pids; (sleep %[1]s.3 & echo $! >> pids) ; touch started; wait", marker)
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := sandboxtest.CallRunErr(ctx, srv.Session, protocol.RunCommandInput{Command: cmd, TimeoutSeconds: 300})
				errc <- err
			}()
			waitUntil(t, 10*time.Second, func() bool { _, err := os.Stat(filepath.Join(ws, "started")); return err == nil })
			if len(sandboxtest.ProcessesWith(marker)) < 3 {
				t.Fatalf("the command's processes are not running: %v", sandboxtest.ProcessesWith(marker))
			}
			cancel()
			if err := <-errc; err == nil {
				t.Errorf("cancelled call returned no error")
			}
			waitUntil(t, 5*time.Second, func() bool { return len(sandboxtest.ProcessesWith(marker)) == 0 })
			if mode.noNamespaces {
				pids, _ := os.ReadFile(filepath.Join(ws, "pids"))
				for _, f := range strings.Fields(string(pids)) {
					pid, _ := strconv.Atoi(f)
					if pid > 0 && sandboxtest.PidAlive(pid) {
						t.Errorf("pid %d from the pid file is alive after cancellation", pid)
					}
				}
			}
			// The server still answers on the same session.
			if out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "echo ok"}); out.Stdout != "ok\n" {
				t.Errorf("after cancel: %+v", out)
			}
		})
	}
}

func waitUntil(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunPolicy(t *testing.T) {
	p, err := execserver.NewPolicy([]string{`^(go|python3|ls|echo)\b`}, []string{`\brm\s+-rf\b`, `curl`})
	if err != nil {
		t.Fatal(err)
	}
	srv, ws := localServer(t, execserver.Config{Policy: p}, nil)
	if err := os.WriteFile(filepath.Join(ws, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg := sandboxtest.ToolError(t, srv.Session, protocol.RunCommandInput{Command: "echo x; rm -rf keep"}); !strings.Contains(msg, `deny pattern "\\brm\\s+-rf\\b"`) {
		t.Errorf("deny: %q", msg)
	}
	if msg := sandboxtest.ToolError(t, srv.Session, protocol.RunCommandInput{Command: "cat keep"}); !strings.Contains(msg, "none of the allow patterns") {
		t.Errorf("allow: %q", msg)
	}
	if _, err := os.Stat(filepath.Join(ws, "keep")); err != nil {
		t.Errorf("refused command ran: %v", err)
	}
	if out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "echo allowed"}); out.Stdout != "allowed\n" {
		t.Errorf("allowed command: %+v", out)
	}
	if _, err := execserver.NewPolicy([]string{"("}, nil); err == nil {
		t.Errorf("bad pattern accepted")
	}
}

func TestPolicyRefusalIsAudited(t *testing.T) {
	p, _ := execserver.NewPolicy(nil, []string{`forbidden`})
	b, ws := newLocalTestBackend(t, nil)
	g, _ := pathguard.Open(ws, pathguard.Options{})
	defer g.Close()
	ex, err := execserver.New(execserver.Config{Policy: p}, b, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf safeBuffer
	mcpserve.Audit(ex.Server(), execserver.Name, &buf)
	run, err := mcpserve.Start(ex.Server(), mcpserve.Config{Addr: "127.0.0.1:0", Token: mcpserve.NoToken}, ex.Health, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: run.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	sandboxtest.ToolError(t, cs, protocol.RunCommandInput{Command: "echo forbidden"})
	var rec mcpserve.AuditRecord
	if err := json.Unmarshal([]byte(buf.String()), &rec); err != nil {
		t.Fatalf("audit line %q: %v", buf.String(), err)
	}
	if rec.Outcome != "tool_error" || !strings.Contains(rec.Error, "refused by policy") || rec.Tool != protocol.ToolRunCommand {
		t.Errorf("audit record: %+v", rec)
	}
}

type safeBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestHealthReportsConfinement(t *testing.T) {
	sandboxtest.RequireNamespaceMode(t)
	srv, _ := localServer(t, execserver.Config{}, nil)
	resp, err := http.Get("http://" + srv.Addr + protocol.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Backend     string         `json:"backend"`
		Confinement map[string]any `json:"confinement"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	c := h.Confinement
	if h.Backend != "local" || c["mode"] != "pid-namespace" || !strings.HasPrefix(fmt.Sprint(c["landlock"]), "enforced") ||
		!strings.HasPrefix(fmt.Sprint(c["capabilities"]), "none") {
		t.Errorf("health: %+v", h)
	}
}

// TestHealthReportsPolicyAsData: /healthz carries the sandbox policy as fields and enumerated properties, and what
// it says is what a command finds.
func TestHealthReportsPolicyAsData(t *testing.T) {
	sandboxtest.RequireNamespaceMode(t)
	srv, _ := localServer(t, execserver.Config{}, nil)
	resp, err := http.Get("http://" + srv.Addr + protocol.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h protocol.ExecutorHealth
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	p := h.Confinement.Sandbox
	if p == nil {
		t.Fatal("no sandbox policy in /healthz")
	}
	// A sandbox built as planned warns of nothing (a symlink's text was once opened as if it were a bind's source).
	if h.Confinement.LocalConfinement != nil && len(h.Confinement.Warnings) > 0 {
		t.Errorf("the namespace mode warns: %q", h.Confinement.Warnings)
	}
	holds := map[string]bool{}
	for _, q := range p.Properties {
		holds[q.Name] = q.Holds
	}
	// The workspace guard's layer replaces the sweep where the kernel mounts overlayfs in a user namespace.
	for _, name := range []string{"minimal_root", "host_sockets_unreachable", "protected_files_read_only", "workspace_layer", "pid_namespace", "private_network", "no_sys"} {
		if !holds[name] {
			t.Errorf("property %s does not hold in the namespace mode: %+v", name, p.Properties)
		}
	}
	if p.Root != protocol.RootMinimal || p.ProtectedEnforcement != protocol.ProtectedLayer || !slices.Contains(p.Protected, ".git/hooks") ||
		!slices.Contains(p.ReadPaths, "/usr") || !slices.Contains(p.WritePaths, pathguard.DefaultAdvertisedRoot) {
		t.Errorf("policy: %+v", p)
	}
	// What the policy says is what a command finds: /usr is there, the rest of the host's top level is not.
	out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "for d in /usr /sys /run /var /opt /home /srv /mnt; do test -e $d && echo $d; done"})
	if strings.TrimSpace(out.Stdout) != "/usr" {
		t.Errorf("top-level folders a command finds: %q, want only /usr of these", out.Stdout)
	}
}

func TestRunConcurrent(t *testing.T) {
	srv, _ := localServer(t, execserver.Config{}, nil)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: fmt.Sprintf("sleep 0.3; echo %d", i)})
			if out.Stdout != fmt.Sprintf("%d\n", i) {
				t.Errorf("command %d: %+v", i, out)
			}
		})
	}
	wg.Wait()
}

func TestStdio(t *testing.T) {
	ws := t.TempDir()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), stdioServerEnv+"="+ws)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools: %v", err)
	}
	i := slices.IndexFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == protocol.ToolRunCommand })
	if i < 0 {
		t.Fatalf("tools/list over stdio has no %s", protocol.ToolRunCommand)
	}
	tool := tools.Tools[i]
	a := tool.Annotations
	if tool.Name != protocol.ToolRunCommand || a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint || a.IdempotentHint ||
		a.OpenWorldHint == nil || *a.OpenWorldHint || tool.OutputSchema == nil {
		t.Errorf("tool: %+v annotations %+v", tool, a)
	}
	out := sandboxtest.MustRun(t, cs, protocol.RunCommandInput{Command: "echo over stdio; exit 4"})
	if out.Stdout != "over stdio\n" || out.ExitCode != 4 {
		t.Errorf("stdio: %+v", out)
	}
}

func TestRunProcessLimit(t *testing.T) {
	if !pidsCgroupAvailable(t) {
		ciskip.Skip(t, "no pids cgroup on this machine")
	}
	for _, noNS := range []bool{false, true} {
		b, ws := newLocalTestBackend(t, func(c *Config) { c.PidsLimit = 40; c.NoNamespaces = noNS })
		srv := sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil)
		out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "n=0; for i in $(seq 80); do sleep 2 & n=$((n+1)); done; jobs -p | wc -l; wait"})
		if !strings.Contains(out.Stderr, "fork") {
			t.Errorf("no namespaces %v: 80 background processes under a limit of 40 did not fail to fork: %+v", noNS, out)
		}
	}
}

func TestRunPrivateTmp(t *testing.T) {
	sandboxtest.RequireNamespaceMode(t)
	srv, ws := localServer(t, execserver.Config{}, nil)
	// /tmp is private and writable (the JVM ignores TMPDIR), and the workspace, which the tests keep under /tmp,
	// is still where it was.
	out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "echo t > /tmp/private-probe && cat /tmp/private-probe && ls $TMPDIR/private-probe && pwd && echo w > in-ws"})
	if out.ExitCode != 0 || !strings.HasPrefix(out.Stdout, "t\n") || !strings.Contains(out.Stdout, ws) {
		t.Fatalf("private /tmp: %+v", out)
	}
	if _, err := os.Stat("/tmp/private-probe"); err == nil {
		os.Remove("/tmp/private-probe")
		t.Errorf("the command wrote the host's /tmp")
	}
	if b, err := os.ReadFile(filepath.Join(ws, "in-ws")); err != nil || string(b) != "w\n" {
		t.Errorf("workspace file: %q %v", b, err)
	}
}

func TestRunMemoryLimitPerCommand(t *testing.T) {
	if _, _, err := cgroup.OwnDir("memory"); err != nil {
		ciskip.Skipf(t, "no memory cgroup here: %v", err)
	}
	b, ws := newLocalTestBackend(t, func(c *Config) { c.MemoryLimit = 300 << 20 })
	if b.(*localBackend).mem == nil {
		ciskip.Skipf(t, "no memory cgroup: %s", b.(*localBackend).memNote)
	}
	srv := sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil)
	// Three processes of 200 MiB each stay under the per-process limit but not under the per-command one.
	out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{TimeoutSeconds: 60, Command: `for i in 1 2 3; do
python3 -c "import time; b = bytearray(200 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(3); print('HELD')" &
done; wait`})
	if strings.Count(out.Stdout, "HELD") == 3 {
		t.Errorf("600 MiB held under a 300 MiB limit per command: %+v", out)
	}
	if out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "echo alive"}); out.Stdout != "alive\n" {
		t.Errorf("after the memory limit: %+v", out)
	}
}
