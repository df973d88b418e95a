package mcpserve

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// TestTokenByDefault: a server started with no token requires one it generated (Start keeps it in memory), a fresh
// one each start; no token and a wrong one get a 401 that says what was wrong and what is required.
func TestTokenByDefault(t *testing.T) {
	var toks []string
	for range 2 {
		r, err := Start(newEchoServer(), Config{Addr: "127.0.0.1:0"}, NoHealth, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		if len(r.Token) < 40 {
			t.Fatalf("generated token %q: want at least 40 random characters", r.Token)
		}
		toks = append(toks, r.Token)
		for _, c := range []struct {
			auth   string
			status int
			says   string
		}{
			{"", 401, "no Authorization header"},
			{"Bearer wrong", 401, "holds a wrong token"},
			{"Basic " + r.Token, 401, "not of the Bearer scheme"},
			{"Bearer " + r.Token, 200, ""}, // positive control
		} {
			resp := post(t, r.URL, func(req *http.Request) {
				if c.auth != "" {
					req.Header.Set("Authorization", c.auth)
				}
			})
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status || !strings.Contains(string(body), c.says) {
				t.Errorf("Authorization %q: %d %s; want %d saying %q", c.auth, resp.StatusCode, body, c.status, c.says)
			}
			if c.status == 401 && (!strings.Contains(string(body), `the header Authorization with the value \"Bearer\", a space`) || resp.Header.Get("WWW-Authenticate") != authChallenge) {
				t.Errorf("a 401 must name the header required: %s %v", body, resp.Header)
			}
		}
	}
	if toks[0] == toks[1] {
		t.Error("two starts generated the same token")
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runInBackground runs Run until the test ends (or stop is called) and returns what it printed for a person and logged.
func runInBackground(t *testing.T, cfg Config) (stop func() error, printed, logged *syncBuffer) {
	t.Helper()
	printed, logged = &syncBuffer{}, &syncBuffer{}
	t.Cleanup(SetConsole(printed))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := Run(ctx, newEchoServer(), "goalbox-echo", cfg, NoHealth, slog.New(slog.NewJSONHandler(logged, nil)))
		if err != nil && ctx.Err() == nil {
			t.Errorf("Run: %v", err)
		}
		done <- err
	}()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(15 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
		return nil
	}
	t.Cleanup(func() { stop() })
	return stop, printed, logged
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestRunWritesTheTokenFile: Run with no token writes the one it generated to a file of this user's alone (0600 in a
// 0700 folder it made, whatever the umask), prints the URL, the header and a client configuration once, logs where
// the file is but not the token, and removes the file at shutdown.
func TestRunWritesTheTokenFile(t *testing.T) {
	addr := freeAddr(t)
	file, ws := filepath.Join(t.TempDir(), "made", "echo.token"), t.TempDir()
	// Made after the folders above, which a umask of 0 would open to everyone (and the walk then refuse).
	defer setUmask(0)()
	stop, printed, logged := runInBackground(t, Config{Addr: addr, Workspace: ws, TokenFile: file})
	waitFor(t, "the token file", func() bool { _, err := os.Stat(file); return err == nil })
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(b))
	fi, _ := os.Stat(file)
	di, _ := os.Stat(filepath.Dir(file))
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("token file mode %v, its folder %v: want 0600 and 0700", fi.Mode().Perm(), di.Mode().Perm())
	}
	url := "http://" + addr + "/mcp"
	waitFor(t, "the announcement", func() bool { return strings.Contains(printed.String(), "Bearer "+token) })
	for _, want := range []string{url, "Authorization: Bearer " + token, file, `"Authorization": "Bearer ` + token + `"`} {
		if !strings.Contains(printed.String(), want) {
			t.Errorf("the announcement lacks %q:\n%s", want, printed.String())
		}
	}
	if strings.Count(printed.String(), token) != 2 {
		t.Errorf("the token should be printed once as the header and once in the configuration:\n%s", printed.String())
	}
	if strings.Contains(logged.String(), token) || !strings.Contains(logged.String(), `"token_file":"`+file+`"`) {
		t.Errorf("the log must name the token file and never hold the token:\n%s", logged.String())
	}
	if resp := post(t, url, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }); resp.StatusCode != 200 {
		t.Errorf("the token from the file: %d", resp.StatusCode)
	}
	if resp := post(t, url, nil); resp.StatusCode != 401 {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the token file outlived the server: %v", err)
	}
}

// TestRunWithoutTokenWarns: -token none serves without a token, and says loudly what that means, on the console and
// in the log.
func TestRunWithoutTokenWarns(t *testing.T) {
	addr := freeAddr(t)
	_, printed, logged := runInBackground(t, Config{Addr: addr, Workspace: t.TempDir(), Token: NoToken})
	url := "http://" + addr + "/mcp"
	waitFor(t, "the server", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if resp := post(t, url, nil); resp.StatusCode != 200 {
		t.Errorf("-token none, no token sent: %d, want 200", resp.StatusCode)
	}
	waitFor(t, "the warning", func() bool { return strings.Contains(printed.String(), "NO TOKEN") })
	if !strings.Contains(printed.String(), "Every user") || !strings.Contains(logged.String(), `"level":"WARN"`) {
		t.Errorf("-token none must warn on the console and in the log:\n%s\n%s", printed.String(), logged.String())
	}
}

// TestRunRefusesAnUnsafeTokenFolder: a token file is never written through a folder or symlink another user
// controls; each refusal names the place and why; the positive controls (a root-owned symlink, a stale file, a
// folder of ours left open) are written.
func TestRunRefusesAnUnsafeTokenFolder(t *testing.T) {
	if os.Geteuid() != 0 {
		ciskip.Skip(t, "needs root to make folders of another uid")
	}
	const other = 4242420 // a uid of no one: what counts is that it is not this process's
	base := t.TempDir()
	os.Chmod(base, 0o755)
	mk := func(p string, mode os.FileMode, uid int) string {
		if err := os.MkdirAll(p, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := mk(filepath.Join(base, "root-only"), 0o700, 0)
	users := mk(filepath.Join(base, "home-of-other"), 0o755, other)
	// The other user plants a symlink where the server's token folder would be (sudo -E keeps the user's HOME).
	planted := filepath.Join(users, ".cache")
	if err := os.Symlink(secret, planted); err != nil {
		t.Fatal(err)
	}
	os.Lchown(planted, other, other)
	open := mk(filepath.Join(base, "group-writable"), 0o775, 0)
	theirs := mk(filepath.Join(base, "theirs"), 0o700, other)
	for _, c := range []struct {
		name, path, says string
	}{
		{"a folder of another user on the way", filepath.Join(users, "goalbox", "t.token"), "belongs to uid 4242420"},
		{"a symlink the other user planted", filepath.Join(planted, "goalbox", "t.token"), "home-of-other"},
		{"a folder others may write on the way", filepath.Join(open, "goalbox", "t.token"), "writable by other users"},
		{"the last folder another user's", filepath.Join(theirs, "t.token"), "belongs to uid 4242420"},
	} {
		_, _, err := writeTokenFile(c.path, "goalbox-echo", "127.0.0.1:1", "tok")
		if err == nil || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "-token-file") {
			t.Errorf("%s: %v; want a refusal saying %q and naming -token-file", c.name, err, c.says)
		}
	}
	if entries, _ := os.ReadDir(secret); len(entries) != 0 {
		t.Errorf("the planted symlink led a write into the root-only folder: %v", entries)
	}
	// Positive controls: a symlink of root's is followed; a stale file and a symlink planted as the file itself are
	// replaced by a fresh file, not written through; a folder of ours left open is closed.
	mine := mk(filepath.Join(base, "mine"), 0o755, 0)
	link := filepath.Join(base, "link-of-root")
	os.Symlink(mine, link)
	stale := filepath.Join(mine, "t.token")
	os.Symlink(filepath.Join(secret, "target"), stale)
	path, remove, err := writeTokenFile(filepath.Join(link, "t.token"), "goalbox-echo", "127.0.0.1:1", "tok")
	if err != nil {
		t.Fatalf("positive control: %v", err)
	}
	if b, err := os.ReadFile(stale); err != nil || string(b) != "tok\n" {
		t.Errorf("written to %s: %q %v", path, b, err)
	}
	if fi, _ := os.Lstat(stale); !fi.Mode().IsRegular() {
		t.Errorf("the planted symlink was kept: %v", fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(secret, "target")); err == nil {
		t.Error("the write went through the symlink planted as the file")
	}
	if di, _ := os.Stat(mine); di.Mode().Perm() != 0o700 {
		t.Errorf("our own folder left %v, want 0700", di.Mode().Perm())
	}
	remove()
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("not removed: %v", err)
	}
}

func TestTokenFileNames(t *testing.T) {
	a, b := tokenFileName("goalbox-filesystem", "127.0.0.1:7101"), tokenFileName("goalbox-executor", "[::1]:7102")
	if a != "filesystem-127.0.0.1-7101.token" || b != "executor-__1-7102.token" {
		t.Errorf("names %q %q", a, b)
	}
	if !bytes.Equal([]byte(a), []byte(filepath.Base(a))) {
		t.Error("a name must not hold a separator")
	}
}

// TestTheTokenFileIsThereOnceTheServerAnswers: a script that waits for the health endpoint and then reads the token
// file must find it, so nothing is answered until the file is written. While Run is about to write it (the hook),
// a health request waits unanswered; the control is the same request once the file is there.
func TestTheTokenFileIsThereOnceTheServerAnswers(t *testing.T) {
	addr := freeAddr(t)
	file := filepath.Join(t.TempDir(), "echo.token")
	health := func(timeout time.Duration) error {
		resp, err := (&http.Client{Timeout: timeout}).Get("http://" + addr + protocol.HealthPath)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	answeredEarly := make(chan error, 1)
	writingTokenFile = func(string) { answeredEarly <- health(500 * time.Millisecond) }
	defer func() { writingTokenFile = nil }()
	runInBackground(t, Config{Addr: addr, Workspace: t.TempDir(), TokenFile: file})
	if err := <-answeredEarly; err == nil {
		t.Fatal("the health endpoint answered before the token file was written")
	}
	waitFor(t, "the health endpoint", func() bool { return health(time.Second) == nil })
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the health endpoint answers but the token file is not there: %v", err)
	}
}
