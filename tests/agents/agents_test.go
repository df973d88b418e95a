package agents

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bins are the two servers, built once from this checkout.
var bins struct{ fs, exec string }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "goalbox-agents-bin")
	if err != nil {
		panic(err)
	}
	bins.fs, bins.exec = filepath.Join(dir, "fs"), filepath.Join(dir, "exec")
	for _, b := range [][2]string{{bins.fs, "../../servers/filesystem"}, {bins.exec, "../../servers/executor"}} {
		if out, err := exec.Command("go", "build", "-o", b[0], b[1]).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", b[1], err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// agentsDir is where scripts/setup-agents.sh installed the CLIs: GOALBOX_AGENTS_DIR, else the folder it uses
// (agents_dir in scripts/lib.sh: the cache folder plus the lock file's hash). Without them the tests skip, except
// with CI=true, where they fail.
func agentsDir(t *testing.T) string {
	d := os.Getenv("GOALBOX_AGENTS_DIR")
	if d == "" {
		d = filepath.Join(cacheDir(), "agents-"+lockHash())
	}
	if _, err := os.Stat(filepath.Join(d, ".installed")); err == nil {
		return d
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the coding-agent CLIs are not installed in %s: scripts/setup-agents.sh installs them", d)
	}
	t.Skipf("the coding-agent CLIs are not installed in %s: run scripts/setup-agents.sh (no root needed)", d)
	return ""
}

// cacheDir is scripts/lib.sh's CACHE_DIR.
func cacheDir() string {
	if d := os.Getenv("GOALBOX_CACHE_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/cache/goalbox"
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "goalbox")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "goalbox")
}

func lockHash() string {
	b, err := os.ReadFile("package-lock.json")
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))[:12]
}

// session is one client's run: its home folder, the workspace, the model, and the servers as the client reaches
// them.
type session struct {
	t          *testing.T
	dir        string // the agents' install folder (node_modules/.bin)
	home, ws   string
	model      *Model
	modelURL   string
	http       bool
	fsURL      string
	execURL    string
	fsToken    string // what the client is configured with (from its environment)
	execToken  string
	serverLogs []string
	// official is set over stdio: the client is also given the official filesystem server, the control
	// (control_test.go), spawned like goalbox's.
	official bool
}

// newSession starts the model and, over HTTP, both servers with tokens of their own; over stdio the client
// spawns them. The workspace holds a 1x1 PNG and a file outside it the error step asks for.
func newSession(t *testing.T, overHTTP bool, plan []Call) *session {
	t.Helper()
	s := &session{t: t, dir: agentsDir(t), home: t.TempDir(), ws: filepath.Join(t.TempDir(), "ws"), http: overHTTP, official: !overHTTP, model: &Model{Plan: plan}}
	if err := os.MkdirAll(s.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	png, _ := base64.StdEncoding.DecodeString(dotPNG)
	os.WriteFile(filepath.Join(s.ws, "dot.png"), png, 0o644)
	os.WriteFile(filepath.Join(filepath.Dir(s.ws), "outside.txt"), []byte("secret\n"), 0o644)
	os.WriteFile(filepath.Join(s.ws, "long.txt"), []byte(longFile()), 0o644)
	ms := httptest.NewServer(s.model)
	t.Cleanup(ms.Close)
	s.modelURL = ms.URL
	if overHTTP {
		s.fsToken, s.execToken = "fs-token-"+randomWord(), "exec-token-"+randomWord()
		s.fsURL = s.startServer(bins.fs, "GOALBOX_FS_TOKEN", s.fsToken)
		s.execURL = s.startServer(bins.exec, "GOALBOX_EXEC_TOKEN", s.execToken)
	}
	return s
}

// officialServer is the command line that spawns the official filesystem server (@modelcontextprotocol/server-filesystem,
// pinned with the clients) on the workspace.
func (s *session) officialServer() []string {
	return []string{filepath.Join(s.dir, "node_modules", ".bin", "mcp-server-filesystem"), s.ws}
}

func randomWord() string { return fmt.Sprintf("%x", time.Now().UnixNano()) }

// startServer starts a server on a loopback port of its choosing with the token in its environment and returns its
// /mcp URL once its health endpoint answers. The port is the one its "serving" log line names: a port found free
// beforehand could be taken, by a test of another package running beside, before the server listened on it (and its
// server would then answer the health check). The server has a minute, and is given up on at once if it exits: a
// server starts in well under a second, but not always on a loaded machine (100 tries 50 ms apart were too few).
func (s *session) startServer(bin, tokenVar, token string) string {
	s.t.Helper()
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-workspace", s.ws)
	cmd.Env = append(os.Environ(), tokenVar+"="+token)
	logPath := filepath.Join(s.home, filepath.Base(bin)+".log")
	logf, _ := os.Create(logPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.t.Cleanup(func() { cmd.Process.Kill(); <-exited; logf.Close() })
	readLog := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if url := servingURL(readLog()); url != "" {
			if resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/healthz"); err == nil {
				resp.Body.Close()
				return url
			}
		}
		select {
		case <-exited:
			s.t.Fatalf("%s exited before it served:\n%s", bin, readLog())
		default:
		}
	}
	s.t.Fatalf("%s did not serve within a minute:\n%s", bin, readLog())
	return ""
}

// servingURL is the MCP endpoint the server's "serving" log line names ("" until it is logged, which is before it
// answers a request).
func servingURL(log string) string {
	for _, line := range strings.Split(log, "\n") {
		var l struct {
			Msg string `json:"msg"`
			URL string `json:"url"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "serving" && strings.HasPrefix(l.URL, "http://") {
			return l.URL
		}
	}
	return ""
}

// clientLimit is how long one client's session may take. A session takes 10 s to 4 minutes here (opencode, a Bun
// app that bootstraps a project, a watcher and a session store before its first model request, the longest; the
// sessions share the cores, go test running two at once); one that hangs is killed at this limit and its steps fail.
const clientLimit = 6 * time.Minute

// run runs the client's command (argv[0] from node_modules/.bin) with the session's environment plus env, for at
// most limit, and returns what it printed.
func (s *session) run(limit time.Duration, env []string, argv ...string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.dir, "node_modules", ".bin", argv[0]), argv[1:]...)
	cmd.Dir = s.ws
	cmd.Env = append([]string{
		"HOME=" + s.home, "PATH=" + filepath.Join(s.dir, "node_modules", ".bin") + ":" + os.Getenv("PATH"),
		"XDG_CONFIG_HOME=" + filepath.Join(s.home, ".config"), "XDG_DATA_HOME=" + filepath.Join(s.home, ".local/share"),
		"XDG_CACHE_HOME=" + filepath.Join(s.home, ".cache"), "XDG_STATE_HOME=" + filepath.Join(s.home, ".local/state"),
		"TERM=dumb", "NO_COLOR=1", "CI=true", "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		"GOALBOX_FS_TOKEN=" + s.fsToken, "GOALBOX_EXEC_TOKEN=" + s.execToken,
	}, env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		s.t.Logf("%s: killed after %v", argv[0], limit)
	} else if err != nil {
		s.t.Logf("%s: %v", argv[0], err)
	}
	return string(out)
}

// dotPNG is a 1x1 PNG, the image the image step reads.
const dotPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

// lines is out without blank lines, for logs.
func lines(out string) []string {
	var l []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			l = append(l, sc.Text())
		}
	}
	return l
}
