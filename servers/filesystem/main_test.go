package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/pathguard"
)

// TestBinary runs the real binary: configuration from the environment with flags winning, the health endpoint,
// graceful shutdown on SIGTERM, and clear errors for bad configuration.
func TestBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "filesystem")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}

	out, err := exec.Command(bin, "-version").Output()
	if err != nil || !strings.HasPrefix(string(out), "goalbox-filesystem ") {
		t.Errorf("-version: %q %v", out, err)
	}
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{nil, "", "no workspace"},
		{[]string{"-workspace", t.TempDir(), "extra"}, "", "unexpected arguments"},
		{[]string{"-workspace", t.TempDir(), "-advertised-root", "relative"}, "", "must be an absolute path"},
		{[]string{"-workspace", t.TempDir()}, "GOALBOX_FS_MAX_READ_LINES=many", "environment"},
		{[]string{"-workspace", t.TempDir(), "-log-level", "loud"}, "", "log level"},
		// Protected project files: a bad pattern is refused at start with what a pattern is.
		{[]string{"-workspace", t.TempDir(), "-protect", "/etc/passwd"}, "", `-protect "/etc/passwd": absolute`},
		{[]string{"-workspace", t.TempDir(), "-protect", "ok,a/../b"}, "", `-protect "a/../b": has an empty, . or .. component`},
		{[]string{"-workspace", t.TempDir()}, "GOALBOX_FS_PROTECT=[", `-protect "[": component "[" is not a valid glob`},
		{[]string{"-workspace", t.TempDir(), "-unprotect", ".vscode", "-unprotect", ".nothere"}, "", `-unprotect ".nothere": not a protected pattern; the patterns are .git/hooks`},
		{[]string{"-workspace", t.TempDir()}, "GOALBOX_FS_UNPROTECT=.git", `-unprotect ".git": not a protected pattern`},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Env = append(os.Environ(), c.env)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%v %s: exit %v, output %q; want exit 2 and %q", c.args, c.env, err, out, c.want)
		}
	}

	// Serve: the workspace and limits come from the environment, a flag overrides one of them.
	ws := t.TempDir()
	cmd := exec.Command(bin, "-max-read-lines", "7", "-protect", "*.pem", "-protect", "secrets,.ssh")
	cmd.Env = append(os.Environ(), "GOALBOX_FS_ADDR="+mcptest.AnyPort, "GOALBOX_FS_WORKSPACE="+ws, "GOALBOX_FS_MAX_READ_LINES=5",
		"GOALBOX_FS_MAX_WRITE_BYTES=4096", "GOALBOX_FS_ADVERTISED_ROOT=/src", "GOALBOX_FS_UNPROTECT=.vscode,.idea")
	stderr := &syncLines{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var health map[string]any
	for deadline := time.Now().Add(15 * time.Second); ; {
		var err error
		if addr := mcptest.ServingAddr(stderr.String()); addr != "" {
			var resp *http.Response
			if resp, err = http.Get("http://" + addr + "/healthz"); err == nil {
				err = json.NewDecoder(resp.Body).Decode(&health)
				resp.Body.Close()
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not come up: %v\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	limits, _ := health["limits"].(map[string]any)
	if health["workspace"] != "/src" || health["advertised_root"] != "/src" || limits["max_read_lines"] != 7.0 || limits["max_write_bytes"] != 4096.0 {
		t.Errorf("health: %v", health)
	}
	// The protected patterns as data: the defaults less the environment's -unprotect, plus the flags' -protect.
	var protected []string
	for _, p := range health["protected"].([]any) {
		protected = append(protected, p.(string))
	}
	want := slices.DeleteFunc(slices.Clone(pathguard.DefaultProtected), func(p string) bool { return p == ".vscode" || p == ".idea" })
	if want = append(want, "*.pem", "secrets", ".ssh"); !slices.Equal(protected, want) {
		t.Errorf("health protected = %q, want %q", protected, want)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the server did not shut down on SIGTERM")
	}
	for _, want := range []string{`"msg":"filesystem server"`, `"msg":"serving"`, `"msg":"shutting down"`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, stderr.String())
		}
	}
}
