//go:build linux

package local

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress/egresstest"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// gitRepo makes a bare repository with one commit of README, for git-http-backend to serve.
func gitRepo(t *testing.T, root string) {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	env := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "HOME="+t.TempDir())
	for _, args := range [][]string{
		{"init", "-q", "--bare", filepath.Join(root, "repo.git")},
		{"init", "-q", work},
		{"-C", work, "commit", "-q", "--allow-empty", "-m", "x"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(work, "README"), []byte("cloned through the proxy\n"), 0o644)
	for _, args := range [][]string{{"-C", work, "add", "README"}, {"-C", work, "commit", "-q", "-m", "readme"},
		{"-C", work, "push", "-q", filepath.Join(root, "repo.git"), "HEAD:refs/heads/main"}, {"-C", filepath.Join(root, "repo.git"), "symbolic-ref", "HEAD", "refs/heads/main"}} {
		cmd := exec.Command("git", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
}

// TestEgressSecrets: -secret against upstreams in the test's own network namespace. curl (a bearer header), git
// (a clone over HTTPS with the token in the URL) and go mod download (a GOPROXY with credentials) authenticate with
// the real value at the secret's host; the same placeholder to another allowed host, or over plain HTTP, is
// refused naming the secret; the real value is nowhere in the sandbox (environment, /proc, files), in the results
// or in the log. Positive controls: the upstream refuses the placeholder and accepts the real value from the host.
func TestEgressSecrets(t *testing.T) {
	const real = "real-value-7d1f3c"
	t.Setenv("GOALBOX_TEST_SECRET_TOKEN", real)
	t.Setenv("GOALBOX_TEST_SECRET_OTHER", "other-real-value-91")
	up := egresstest.NewUpstream(t, "secret.test", "allowed.test")
	repos := t.TempDir()
	gitRepo(t, repos)
	git := &cgi.Handler{Path: "/usr/lib/git-core/git-http-backend", Env: []string{"GIT_PROJECT_ROOT=" + repos, "GIT_HTTP_EXPORT_ALL=1"}}
	if _, err := os.Stat(git.Path); err != nil {
		t.Skipf("no git-http-backend: %v", err)
	}
	mods := egresstest.GoProxy(t)
	var mu sync.Mutex
	var seen []string
	authorized := func(r *http.Request) bool {
		_, pass, _ := r.BasicAuth()
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		return r.Header.Get("Authorization") == "Bearer "+real || pass == real
	}
	up.Serve(t, 443, true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`) // git sends the URL's credentials only when asked
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		switch {
		case strings.HasPrefix(r.URL.Path, "/goproxy/"):
			r2 := r.Clone(r.Context())
			r2.URL.Path = strings.TrimPrefix(r.URL.Path, "/goproxy")
			mods.ServeHTTP(w, r2)
		case strings.HasPrefix(r.URL.Path, "/repo.git"):
			git.ServeHTTP(w, r)
		default:
			io.WriteString(w, "authorized\n")
		}
	}))
	up.Serve(t, 80, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain answered\n") }))
	hosts := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hosts, []byte(up.IP+" secret.test allowed.test\n"), 0o644)
	allow, _ := egress.ParseAllowList("secret.test,allowed.test," + up.Subnet)
	tok, err := egress.ParseSecret("TOKEN=env:GOALBOX_TEST_SECRET_TOKEN@secret.test")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := egress.ParseSecret("OTHER=env:GOALBOX_TEST_SECRET_OTHER@allowed.test")
	var logs safeLog
	b, ws := newLocalTestBackend(t, func(c *Config) {
		c.Network = egress.Config{Allow: allow, Resolver: egress.HostsFile(hosts), Secrets: []egress.Secret{tok, other}, UpstreamCA: up.CAPEM,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	})
	srv := sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil)
	var results strings.Builder
	run := func(command string) protocol.RunCommandOutput {
		t.Helper()
		out := sandboxtest.MustCall[protocol.RunCommandOutput](t, srv.Session, protocol.ToolRunCommand, protocol.RunCommandInput{Command: command, TimeoutSeconds: 120})
		fmt.Fprintf(&results, "%+v\n", out)
		return out
	}

	if eg := srv.Exec.Health().Confinement.Egress; eg == nil || strings.Join(eg.Secrets, " ") != "TOKEN@secret.test OTHER@allowed.test" {
		t.Errorf("/healthz secrets: %+v", eg)
	}
	tools, err := srv.Session.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == protocol.ToolRunCommand && !strings.Contains(tool.Description, "$TOKEN for https://secret.test") {
			t.Errorf("the tool description does not say how to use the secrets: %s", tool.Description)
		}
	}

	// Positive controls, from the host: the upstream refuses the placeholder and takes the real value.
	for _, c := range []struct {
		token string
		code  int
	}{{tok.Placeholder(), 401}, {real, 200}} {
		req, _ := http.NewRequest("GET", "https://secret.test/", nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := up.HostClient(up.IP).Do(req)
		if err != nil || resp.StatusCode != c.code {
			t.Fatalf("control: the upstream with %q: %v %v, want %d", c.token, resp, err, c.code)
		}
		resp.Body.Close()
	}

	out := run(`curl -sS --fail-with-body -H "Authorization: Bearer $TOKEN" https://secret.test/api`)
	if out.Stdout != "authorized\n" {
		t.Errorf("curl with the placeholder to its host: exit %d %q %q", out.ExitCode, out.Stdout, out.Stderr)
	}
	out = run(`cd $TMPDIR && rm -rf clone && git clone -q "https://x-access-token:$TOKEN@secret.test/repo.git" clone && cat clone/README`)
	if out.ExitCode != 0 || out.Stdout != "cloned through the proxy\n" {
		t.Errorf("git clone with the token in the URL: exit %d %q %q", out.ExitCode, out.Stdout, out.Stderr)
	}
	out = run(`cd $TMPDIR && GOPROXY="https://u:$TOKEN@secret.test/goproxy" GOSUMDB=off GOFLAGS=-modcacherw go mod download -json ` + egresstest.GoModule + `@v1.0.0`)
	if out.ExitCode != 0 || !strings.Contains(out.Stdout, `"Version": "v1.0.0"`) {
		t.Errorf("go mod download from a GOPROXY with credentials: exit %d %q %q", out.ExitCode, out.Stdout, out.Stderr)
	}

	out = run(`curl -sS -H "Authorization: Bearer $TOKEN" https://allowed.test/; echo; curl -sS -H "Authorization: Bearer $TOKEN" http://secret.test/`)
	if strings.Count(out.Stdout, "secret TOKEN") != 2 || strings.Contains(out.Stdout, "authorized") || strings.Contains(out.Stdout, "plain answered") {
		t.Errorf("the placeholder to another host and over plain HTTP: %q", out.Stdout)
	}
	if strings.Join(out.NetworkDenied, " ") != "allowed.test:443 secret.test:80" {
		t.Errorf("network_denied %v", out.NetworkDenied)
	}

	// The real value is nowhere in the sandbox; the placeholder is (the positive control of the search).
	out = run(`echo "$TOKEN"; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do cat "$f" 2>/dev/null; done | tr '\0' '\n' | grep -c goalbox_secret_; ` +
		`grep -rl -- "` + real + `" /proc/self/environ "$HOME" "$TMPDIR" . 2>/dev/null; env | grep -c -- "` + real + `"; true`)
	if !strings.HasPrefix(out.Stdout, tok.Placeholder()+"\n") || strings.Contains(out.Stdout, real[5:]) {
		t.Errorf("inside the sandbox: %q", out.Stdout)
	}
	mu.Lock()
	sawReal := false
	for _, a := range seen {
		if strings.Contains(a, real) || strings.Contains(a, "Basic ") {
			sawReal = true
		}
	}
	mu.Unlock()
	if !sawReal {
		t.Errorf("the upstream never saw the real value: %v", seen)
	}
	for what, text := range map[string]string{"the results": results.String(), "the log": logs.String(), "/healthz": fmt.Sprintf("%+v", srv.Exec.Health())} {
		if strings.Contains(text, real) || strings.Contains(text, "other-real-value") {
			t.Errorf("the real value is in %s", what)
		}
	}
}

type safeLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *safeLog) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *safeLog) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
