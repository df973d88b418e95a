//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

func TestLocalCrossCommandInjection(t *testing.T) {
	for _, noNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-namespaces=%v", noNS), func(t *testing.T) {
			modeWanted(t, noNS)
			if !noNS {
				sandboxtest.RequireNamespaceMode(t)
			}
			b, ws := newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = noNS })
			sandboxtest.CrossCommandInjection(t, sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil))
		})
	}
}

// TestLocalHomesPerWorkspace: a command of one workspace plants a usercustomize.py in its home; python3 in the same
// workspace runs it (positive control), python3 in another workspace under the same cache folder does not.
func TestLocalHomesPerWorkspace(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		ciskip.Skip(t, "python3 is not installed")
	}
	for _, noNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-namespaces=%v", noNS), func(t *testing.T) {
			modeWanted(t, noNS)
			if !noNS {
				sandboxtest.RequireNamespaceMode(t)
			}
			cache := filepath.Join(t.TempDir(), "cache")
			_ = os.Chmod(filepath.Dir(cache), 0o711)
			mk := func() *sandboxtest.Server {
				b, ws := newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = noNS; c.CacheDir = cache })
				return sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil)
			}
			a, b := mk(), mk()
			n := sandboxtest.RandomHex(6)
			plant := sandboxtest.MustRun(t, a.Session, protocol.RunCommandInput{Command: fmt.Sprintf(`d=$(python3 -c 'import site; print(site.getusersitepackages())') && mkdir -p "$d" && echo 'print("PLANTED-%s")' > "$d/usercustomize.py" && echo marker > ~/plant-%s && echo ok`, n, n)})
			if plant.Stdout != "ok\n" {
				ciskip.Skipf(t, "python3 here has no user site folder to plant in: %+v", plant)
			}
			if ctl := sandboxtest.MustRun(t, a.Session, protocol.RunCommandInput{Command: "python3 -c pass"}); !strings.Contains(ctl.Stdout, "PLANTED-"+n) {
				t.Fatalf("positive control: the planted usercustomize.py does not run in its own workspace: %+v", ctl)
			}
			other := sandboxtest.MustRun(t, b.Session, protocol.RunCommandInput{Command: fmt.Sprintf("python3 -c pass; ls ~/plant-%s 2>&1; echo $HOME", n)})
			if strings.Contains(other.Stdout, "PLANTED-"+n) || strings.Contains(other.Stdout, "marker") {
				t.Errorf("what one workspace's command left in its home ran in another workspace: %+v", other)
			}
		})
	}
}

// TestLocalContainmentAsOrdinaryUser runs the containment suite (and the isolation tests) again with the server as
// an ordinary user, as Claude Desktop and Cursor start it: a copy of this test binary, run as an unprivileged uid.
// The server must get the full namespace mode through a user namespace.
func TestLocalContainmentAsOrdinaryUser(t *testing.T) {
	if os.Getenv(asUserEnv) != "" {
		t.Skip("already the ordinary user")
	}
	if os.Geteuid() != 0 {
		ciskip.Skip(t, "needs root to start a process as another user; the run as this user is the normal run")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	const uid = 64010
	dir, err := os.MkdirTemp("", "goalbox-as-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "execserver.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	home := filepath.Join(dir, "home")
	for _, d := range []string{tmp, home} {
		if err := os.Mkdir(d, 0o700); err != nil || os.Chown(d, uid, uid) != nil {
			t.Fatal("cannot make the user's folders")
		}
	}
	_ = os.Chmod(dir, 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// Two runs: a fallback backend makes the whole process undumpable, after which this user can no longer
	// write a child's uid_map, so the namespace mode is tested in a process of its own.
	for _, run := range []struct{ pattern, modes, must string }{
		{"^(TestLocalRunsAsOrdinaryUserInNamespaces|TestLocalContainment|TestLocalCrossCommandInjection|TestLocalHomesPerWorkspace|TestRunBasics|TestLocalProtectedFiles|TestHealthReportsPolicyAsData|TestWorkspaceGuard)$", "namespaces", "TestLocalContainment"},
		{"^(TestLocalContainmentWithoutNamespaces|TestLocalCrossCommandInjection|TestLocalHomesPerWorkspace|TestRunBasics|TestLocalProtectedFiles|TestWorkspaceGuardFallback)$", "fallback", "TestLocalContainmentWithoutNamespaces"},
	} {
		cmd := exec.CommandContext(ctx, bin, "-test.run", run.pattern, "-test.v")
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, asUserEnv + "=" + run.modes, "LANG=C.UTF-8"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
		out, err := cmd.CombinedOutput()
		summary := regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): .*$`).FindAllString(string(out), -1)
		t.Logf("as uid %d, %s:\n%s", uid, run.modes, strings.Join(summary, "\n"))
		if err != nil {
			t.Fatalf("the suite failed as an ordinary user (%s): %v\n%s", run.modes, err, failures(string(out)))
		}
		if !strings.Contains(string(out), "--- PASS: "+run.must+" ") {
			t.Errorf("%s did not pass as an ordinary user:\n%s", run.must, sandboxtest.Clip(string(out)))
		}
	}
}

// modeWanted says whether a test of the namespace mode (or of the fallback) runs in this process: the ordinary-user
// runs take one mode each.
func modeWanted(t *testing.T, fallback bool) {
	switch os.Getenv(asUserEnv) {
	case "namespaces":
		if fallback {
			t.Skip("the fallback has a run of its own as the ordinary user")
		}
	case "fallback":
		if !fallback {
			t.Skip("the namespace mode has a run of its own as the ordinary user")
		}
	}
}

// asUserEnv is set in the copy of the test binary that runs as an ordinary user.
const asUserEnv = "GOALBOX_TEST_AS_USER"

// TestLocalRunsAsOrdinaryUserInNamespaces: as an ordinary user the backend must use the namespace mode (through a
// user namespace), not the fallback.
func TestLocalRunsAsOrdinaryUserInNamespaces(t *testing.T) {
	if os.Getenv(asUserEnv) != "namespaces" {
		t.Skip("runs inside TestLocalContainmentAsOrdinaryUser")
	}
	b, _ := newLocalTestBackend(t, nil)
	if mode := b.Confinement().Mode; mode != protocol.IsolationPIDNamespace {
		t.Errorf("as uid %d the backend runs in mode %v, want the namespace mode", os.Geteuid(), mode)
	}
}

// failures picks the lines of failed tests and their messages out of go test -v output.
func failures(out string) string {
	var keep []string
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.Contains(l, "--- FAIL") || strings.Contains(l, "_test.go:") {
			keep = append(keep, l)
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "        ") {
				keep = append(keep, lines[i+1])
			}
		}
	}
	return strings.Join(keep, "\n")
}
