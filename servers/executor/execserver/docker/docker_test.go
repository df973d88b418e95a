//go:build linux

package docker

import (
	"context"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/docker/dockertest"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dockerTestUID owns the test workspaces when the tests run as root: the backend refuses to run commands as root,
// and a workspace owned by a plain user is what a real deployment has.
const dockerTestUID = 4242

// dockerTestImage is the image the tests run commands in; scripts/setup-docker.sh builds it.
func dockerTestImage() string { return dockertest.Image() }

// dockerRequire returns a client to the Engine, or skips the test (fails it when CI=true) when there is no Engine
// or no test image.
func dockerRequire(t testing.TB) *client.Client {
	t.Helper()
	cli, _ := dockertest.Require(t)
	return cli
}

// dockerWorkspace is a fresh workspace owned by an unprivileged user, with a sentinel file.
func dockerWorkspace(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, dockerSentinelName), []byte(dockerSentinelText), 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		// t.TempDir's folders are 0700: let the owner reach the workspace, as a filesystem server running as
		// that user would.
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		err := filepath.Walk(ws, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, dockerTestUID, dockerTestUID)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

const (
	dockerSentinelName = "sentinel.txt"
	dockerSentinelText = "the workspace is intact\n"
)

func dockerCheckSentinel(t testing.TB, ws string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws, dockerSentinelName))
	if err != nil || string(b) != dockerSentinelText {
		t.Fatalf("workspace sentinel damaged: %q, %v", b, err)
	}
}

// newDockerTestBackend starts a docker backend over a fresh workspace; mutate adjusts the configuration.
func newDockerTestBackend(t testing.TB, mutate func(*Config)) (*dockerBackend, string) {
	t.Helper()
	dockerRequire(t)
	ws := dockerWorkspace(t)
	cfg := Config{
		Image:            dockerTestImage(),
		WorkspaceHostDir: ws,
		CacheHostDir:     "-",
		Logger:           slog.New(slog.DiscardHandler),
		stateBase:        t.TempDir(),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	b, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.(*dockerBackend), ws
}

// dockerInstanceContainers lists this backend's command containers, running or not (not its network holder, which
// lives as long as the backend: dockerNetworkHolders).
func dockerInstanceContainers(t testing.TB, b *dockerBackend) []container.Summary {
	t.Helper()
	list, err := b.cli.ContainerList(context.Background(), client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("label", labelInstance+"="+b.cfg.Instance, labelRole+"="+roleCommand),
	})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// dockerModes are the two ways a command's container is started: when the command comes (cold), or ahead of it by
// the warm pool. Tests of behaviour run in both.
var dockerModes = []struct {
	name string
	pool int
}{{"cold", 0}, {"warm-pool", 2}}

// dockerSettled waits until only the warm pool's idle containers are left: every container a command used has been
// removed (with a pool, removal finishes after the call returns).
func dockerSettled(t testing.TB, b *dockerBackend) {
	t.Helper()
	dockerWaitFor(t, 30*time.Second, fmt.Sprintf("%d containers (the warm pool) to be left", b.cfg.WarmPool), func() bool {
		return len(dockerInstanceContainers(t, b)) == b.cfg.WarmPool
	})
}

func TestDockerRunThroughMCP(t *testing.T) {
	for _, mode := range dockerModes {
		t.Run(mode.name, func(t *testing.T) {
			b, ws := newDockerTestBackend(t, func(c *Config) { c.WarmPool = mode.pool })
			testDockerRunThroughMCP(t, b, ws)
		})
	}
}

func testDockerRunThroughMCP(t *testing.T, b *dockerBackend, ws string) {
	cs := sandboxtest.StartServer(t, b, ws, execserver.Config{OutputCap: 4 << 10}, nil).Session

	cases := []struct {
		name  string
		in    protocol.RunCommandInput
		check func(t *testing.T, out protocol.RunCommandOutput)
	}{
		{"success", protocol.RunCommandInput{Command: "echo hello; cat sentinel.txt"}, func(t *testing.T, out protocol.RunCommandOutput) {
			if out.ExitCode != 0 || out.Stdout != "hello\n"+dockerSentinelText || out.Stderr != "" || out.TimedOut {
				t.Errorf("got %+v", out)
			}
		}},
		{"non-zero exit", protocol.RunCommandInput{Command: "exit 3"}, func(t *testing.T, out protocol.RunCommandOutput) {
			if out.ExitCode != 3 || out.TimedOut {
				t.Errorf("got %+v", out)
			}
		}},
		{"stderr apart from stdout", protocol.RunCommandInput{Command: "echo out; echo err >&2; exit 1"}, func(t *testing.T, out protocol.RunCommandOutput) {
			if out.ExitCode != 1 || out.Stdout != "out\n" || out.Stderr != "err\n" {
				t.Errorf("got %+v", out)
			}
		}},
		{"stdin", protocol.RunCommandInput{Command: "wc -l; echo done", Stdin: "a\nb\nc\n"}, func(t *testing.T, out protocol.RunCommandOutput) {
			if out.ExitCode != 0 || out.Stdout != "3\ndone\n" {
				t.Errorf("got %+v", out)
			}
		}},
		{"large stdin", protocol.RunCommandInput{Command: "wc -c; true", Stdin: strings.Repeat("x", 3<<20)}, func(t *testing.T, out protocol.RunCommandOutput) {
			if out.ExitCode != 0 || strings.TrimSpace(out.Stdout) != "3145728" {
				t.Errorf("got %+v", out)
			}
		}},
		{"stdin never read", protocol.RunCommandInput{Command: "echo ignored", Stdin: strings.Repeat("y", 3<<20)}, func(t *testing.T, out protocol.RunCommandOutput) {
			if out.ExitCode != 0 || out.Stdout != "ignored\n" {
				t.Errorf("got %+v", out)
			}
		}},
		{"no stdin means EOF", protocol.RunCommandInput{Command: "cat; echo eof"}, func(t *testing.T, out protocol.RunCommandOutput) {
			if out.ExitCode != 0 || out.Stdout != "eof\n" {
				t.Errorf("got %+v", out)
			}
		}},
		{"cwd", protocol.RunCommandInput{Command: "pwd; id -u", Cwd: "sub"}, func(t *testing.T, out protocol.RunCommandOutput) {
			want := fmt.Sprintf("/workspace/sub\n%d\n", b.uid)
			if out.ExitCode != 0 || out.Stdout != want {
				t.Errorf("got %+v, want stdout %q", out, want)
			}
		}},
		{"timeout", protocol.RunCommandInput{Command: "echo started; sleep 60", TimeoutSeconds: 1}, func(t *testing.T, out protocol.RunCommandOutput) {
			if out.ExitCode != -1 || !out.TimedOut || out.Stdout != "started\n" || out.DurationMs > 10_000 {
				t.Errorf("got %+v", out)
			}
		}},
		{"output cap keeps head and tail", protocol.RunCommandInput{Command: "echo FIRST; head -c 3000000 /dev/zero | tr '\\0' x; echo; echo LAST"}, func(t *testing.T, out protocol.RunCommandOutput) {
			if out.ExitCode != 0 || !out.StdoutTruncated || !strings.HasPrefix(out.Stdout, "FIRST\n") ||
				!strings.HasSuffix(out.Stdout, "LAST\n") || len(out.Stdout) > 8<<10 {
				t.Errorf("got exit %d truncated %v, %d bytes: %.80q ... %q", out.ExitCode, out.StdoutTruncated,
					len(out.Stdout), out.Stdout, out.Stdout[max(0, len(out.Stdout)-80):])
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.check(t, sandboxtest.MustRun(t, cs, c.in)) })
	}
	dockerSettled(t, b)
}

func TestDockerCancelKillsAndRemoves(t *testing.T) {
	for _, mode := range dockerModes {
		t.Run(mode.name, func(t *testing.T) {
			b, ws := newDockerTestBackend(t, func(c *Config) { c.WarmPool = mode.pool })
			testDockerCancelKillsAndRemoves(t, b, ws)
		})
	}
}

func testDockerCancelKillsAndRemoves(t *testing.T, b *dockerBackend, ws string) {

	t.Run("backend", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var out strings.Builder
		go func() {
			time.Sleep(700 * time.Millisecond)
			cancel()
		}()
		start := time.Now()
		res, err := b.Run(ctx, backend.Request{Command: "echo up; sleep 60", Dir: ".", Timeout: time.Minute, Stdout: &out})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != -1 || res.TimedOut || time.Since(start) > 20*time.Second {
			t.Errorf("got %+v after %v, want exit -1, not timed out, promptly", res, time.Since(start))
		}
		// A killed container is removed before Run returns, pool or not.
		if left := len(dockerInstanceContainers(t, b)); left > b.cfg.WarmPool {
			t.Errorf("%d containers after cancellation, want at most the %d of the warm pool", left, b.cfg.WarmPool)
		}
		dockerSettled(t, b)
	})

	t.Run("cancelled while the container starts", func(t *testing.T) {
		// Starting a container takes tens of milliseconds at least (create and start are Engine round trips and a
		// runc run); the cancellation comes well before, and launch then never gives the command to the container.
		// (Without that check a command this short would usually still lose the race against the kill, so the
		// test shows the outcome, not which of the two stopped it.)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(2*time.Millisecond, cancel)
		if b.pool != nil {
			// From a pool the container is ready at once: cancel before the call instead.
			cancel()
		}
		res, err := b.Run(ctx, backend.Request{Command: "touch never-ran", Dir: ".", Timeout: time.Minute})
		if err != nil || res.ExitCode != -1 {
			t.Errorf("got %+v, %v; want exit -1", res, err)
		}
		if _, err := os.Stat(filepath.Join(ws, "never-ran")); err == nil {
			t.Error("the command ran after its call was cancelled")
		}
		dockerSettled(t, b)
	})

	t.Run("mcp client cancels", func(t *testing.T) {
		marker := dockerMarker()
		cs := sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil).Session
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: protocol.ToolRunCommand,
				Arguments: protocol.RunCommandInput{Command: "touch cancel-me-started; sleep " + marker}})
			done <- err
		}()
		// Wait until the command runs, then cancel the call.
		dockerWaitFor(t, 30*time.Second, "the command to start", func() bool {
			_, err := os.Stat(filepath.Join(ws, "cancel-me-started"))
			return err == nil
		})
		cancel()
		if err := <-done; err == nil {
			t.Error("a cancelled call returned no error")
		}
		dockerWaitFor(t, 20*time.Second, "the command's processes to end", func() bool {
			return len(dockerHostProcesses(t, "sleep "+marker)) == 0
		})
		dockerSettled(t, b)
		// The server still serves.
		if out := sandboxtest.MustRun(t, cs, protocol.RunCommandInput{Command: "echo alive"}); out.Stdout != "alive\n" {
			t.Errorf("after cancellation got %+v", out)
		}
	})
}

// dockerWaitFor polls cond until it holds or limit passes; it bounds a wait for something the Engine does asynchronously.
func dockerWaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDockerFilesBelongToWorkspaceOwner checks the default user: a file a command writes is owned by the
// workspace's owner, so the filesystem server (running as that owner) can read, change and delete it.
func TestDockerFilesBelongToWorkspaceOwner(t *testing.T) {
	b, ws := newDockerTestBackend(t, nil)
	fi, err := os.Stat(ws)
	if err != nil {
		t.Fatal(err)
	}
	owner := fi.Sys().(*syscall.Stat_t)
	if b.uid != int(owner.Uid) || b.gid != int(owner.Gid) {
		t.Fatalf("default user %d:%d, want the workspace owner %d:%d", b.uid, b.gid, owner.Uid, owner.Gid)
	}
	res, err := b.Run(context.Background(), backend.Request{Command: "mkdir -p out/deep && echo made > out/deep/f.txt", Dir: ".", Timeout: time.Minute})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("got %+v, %v", res, err)
	}
	for _, p := range []string{"out", "out/deep", "out/deep/f.txt"} {
		fi, err := os.Stat(filepath.Join(ws, p))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != owner.Uid || st.Gid != owner.Gid || fi.Mode().Perm()&0o600 != 0o600 {
			t.Errorf("%s: owner %d:%d mode %v, want %d:%d and owner read/write", p, st.Uid, st.Gid, fi.Mode(), owner.Uid, owner.Gid)
		}
	}
	// As the owner itself, not root: what the filesystem server is in a real deployment.
	want := "made\n"
	if os.Getuid() == 0 {
		want += "more\n"
		cmd := exec.Command("sh", "-c", "cat out/deep/f.txt && echo more >> out/deep/f.txt && mv out/deep/f.txt out/f && mv out/f out/deep/f.txt")
		cmd.Dir = ws
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: owner.Uid, Gid: owner.Gid}}
		if out, err := cmd.CombinedOutput(); err != nil || string(out) != "made\n" {
			t.Errorf("as the workspace owner: %q, %v", out, err)
		}
	}
	// Through pathguard, the filesystem server's only way to files.
	g, err := pathguard.Open(ws, pathguard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, data, err := g.ReadFile("out/deep/f.txt"); err != nil || string(data) != want {
		t.Errorf("pathguard read: %q, %v", data, err)
	}
	if _, _, err := g.WriteFile("out/deep/g.txt", []byte("new\n")); err != nil {
		t.Errorf("pathguard write: %v", err)
	}
	if _, _, err := g.Remove("out", true); err != nil {
		t.Errorf("pathguard remove: %v", err)
	}
	dockerCheckSentinel(t, ws)
}

// TestDockerLeftoversRemovedAtStart plays a crashed server: containers with the instance's labels, one running and
// one exited, are gone once a new backend of the same instance starts, and so are its control folders; another
// instance's container and state, and another server user's container of the same instance, are kept.
func TestDockerLeftoversRemovedAtStart(t *testing.T) {
	cli := dockerRequire(t)
	ws := dockerWorkspace(t)
	ctx := context.Background()
	instance := fmt.Sprintf("leftover-test-%d", time.Now().UnixNano())
	other := instance + "-other"
	me := strconv.Itoa(os.Geteuid())
	mk := func(inst, owner string, start bool) string {
		t.Helper()
		c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config: &container.Config{Image: dockerTestImage(), Cmd: []string{"sleep", "300"},
				Labels: map[string]string{labelExecutor: "1", labelInstance: inst, labelOwner: owner}},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
		})
		if start {
			if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		return c.ID
	}
	running, created := mk(instance, me, true), mk(instance, me, false)
	kept, otherUser := mk(other, me, true), mk(instance, "4243", true)
	// A crashed server's control folder, and another instance's.
	state := t.TempDir()
	staleCtl := filepath.Join(state, instance, "ctl", "c-stale")
	otherCtl := filepath.Join(state, other, "ctl", "c-other")
	for _, d := range []string{staleCtl, otherCtl} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}

	b, err := New(ctx, Config{Image: dockerTestImage(), WorkspaceHostDir: ws, CacheHostDir: "-",
		Instance: instance, Logger: slog.New(slog.DiscardHandler), stateBase: state})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, id := range []string{running, created} {
		if _, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil {
			t.Errorf("leftover container %.12s still exists", id)
		}
	}
	for _, id := range []string{kept, otherUser} {
		if _, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err != nil {
			t.Errorf("another instance's or user's container was removed: %v", err)
		}
	}
	if _, err := os.Stat(staleCtl); !os.IsNotExist(err) {
		t.Errorf("leftover control folder still exists: %v", err)
	}
	if _, err := os.Stat(otherCtl); err != nil {
		t.Errorf("another instance's control folder was removed: %v", err)
	}
}

func TestDockerConfigErrors(t *testing.T) {
	dockerRequire(t)
	ws := dockerWorkspace(t)
	ctx := context.Background()
	base := Config{Image: dockerTestImage(), WorkspaceHostDir: ws, CacheHostDir: "-", Logger: slog.New(slog.DiscardHandler)}
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"missing image", func(c *Config) { c.Image = "goalbox/no-such-image:never" },
			"image goalbox/no-such-image:never not found locally; images are never pulled: `docker pull goalbox/no-such-image:never`"},
		{"root user", func(c *Config) { c.User = "0:0" }, "is root"},
		{"named user", func(c *Config) { c.User = "nobody" }, "not a numeric uid"},
		{"relative workspace", func(c *Config) { c.WorkspaceHostDir = "ws" }, "absolute host path"},
		{"tiny memory", func(c *Config) { c.Memory = 1 << 20 }, "below the 16 MiB minimum"},
		{"instance with a glob", func(c *Config) { c.Instance = "a*" }, "use letters, digits"},
	}
	if os.Getuid() == 0 {
		rootWS := t.TempDir()
		cases = append(cases, struct {
			name   string
			mutate func(*Config)
			want   string
		}{"root-owned workspace", func(c *Config) { c.WorkspaceHostDir = rootWS }, "is owned by root"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			c.mutate(&cfg)
			b, err := New(ctx, cfg)
			if err == nil {
				b.Close()
				t.Fatalf("no error, want one containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to contain %q", err, c.want)
			}
		})
	}
}

// TestDockerCacheSurvives checks the build cache folder: writable by the command user, kept between commands,
// named by GOCACHE.
func TestDockerCacheSurvives(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	b, _ := newDockerTestBackend(t, func(c *Config) { c.CacheHostDir = cache })
	run := func(cmd string) string {
		var out strings.Builder
		res, err := b.Run(context.Background(), backend.Request{Command: cmd, Dir: ".", Timeout: time.Minute, Stdout: &out, Stderr: &out})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%q: %+v, %v: %s", cmd, res, err, out.String())
		}
		return out.String()
	}
	run(`mkdir -p "$GOCACHE" && echo kept > "$GOCACHE/marker"`)
	if got := run(`cat /cache/go-build/marker; echo "$HOME"`); got != "kept\n/tmp\n" {
		t.Errorf("second command saw %q", got)
	}
}

func TestDockerConfinementReport(t *testing.T) {
	b, _ := newDockerTestBackend(t, func(c *Config) { c.Memory = 300 << 20; c.PIDs = 99 })
	c := b.Confinement()
	if d := c.DockerConfinement; d == nil || d.BackendName != "docker" || c.Network != protocol.NetworkSharedLoopback || !d.ReadOnlyRoot ||
		c.Capabilities != protocol.CapabilitiesNone || !d.NoNewPrivileges || d.MemoryBytes != 300<<20 || d.PidsLimit != 99 ||
		d.Image != dockerTestImage() || c.LocalConfinement != nil {
		t.Errorf("Confinement() = %+v %+v", c, c.DockerConfinement)
	}
	// A root server on the Docker host (here) gives its containers layers; elsewhere, read-only binds and a sweep.
	wantProt, wantGuard := protocol.ProtectedReadOnly, protocol.ProtectedSweep
	if os.Geteuid() == 0 {
		wantProt, wantGuard = protocol.ProtectedLayer, protocol.ProtectedLayer
	}
	if g := c.WorkspaceGuard; c.DockerConfinement.Protected != wantProt || g == nil || g.Mode != wantGuard ||
		g.BytesAtTheAct != (wantGuard == protocol.ProtectedLayer) || g.InodesAtTheAct != (wantGuard == protocol.ProtectedLayer) {
		t.Errorf("protected %v, workspace guard %+v; want %v and %v (%s)", c.DockerConfinement.Protected, g, wantProt, wantGuard, b.layerNote)
	}
	// The report must match what a container really gets.
	var out strings.Builder
	res, err := b.Run(context.Background(), backend.Request{Command: "cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/memory.max; grep CapEff /proc/self/status; grep NoNewPrivs /proc/self/status; ls /sys/class/net",
		Dir: ".", Timeout: time.Minute, Stdout: &out})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v, %v", res, err)
	}
	want := fmt.Sprintf("99\n%d\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\nlo\n", 300<<20)
	if out.String() != want {
		t.Errorf("inside the container:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestDockerGoToolchain runs a real toolchain in the Go image: go test in the workspace with the read-only root,
// twice, the second run served from the build cache that survives between containers. The cache folder stays the
// same from run to run, as a server's does, so only the first run on a machine compiles the standard library.
func TestDockerGoToolchain(t *testing.T) {
	img := dockerGoImage(t)
	// A fixed workspace folder, cache and instance: the cache is keyed by the workspace's identity, so only a
	// workspace that stays the same folder from run to run keeps its compiled standard library. Its contents are
	// made afresh. Another run of this test at the same time holds the instance's lock: this one then skips.
	base, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	fixed := filepath.Join(base, "goalbox", "docker-test", "go-toolchain")
	ws := filepath.Join(fixed, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(ws)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(ws, e.Name()))
	}
	os.Mkdir(filepath.Join(ws, "sub"), 0o755)
	if os.Getuid() == 0 {
		os.Chown(ws, dockerTestUID, dockerTestUID)
		os.Chown(filepath.Join(ws, "sub"), dockerTestUID, dockerTestUID)
	}
	nb, err := New(context.Background(), Config{Image: img, WorkspaceHostDir: ws, Instance: "go-toolchain-test",
		CacheHostDir: filepath.Join(fixed, "cache"), stateBase: filepath.Join(fixed, "state"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil && strings.Contains(err.Error(), "already serves instance") {
		t.Skipf("another run of this test holds its workspace: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	b := nb.(*dockerBackend)
	t.Cleanup(func() { b.Close() })
	files := map[string]string{
		"go.mod":      "module example.com/sum\n\ngo 1.22\n",
		"sum.go":      "package sum\n\nfunc Sum(a, b int) int { return a + b }\n",
		"sum_test.go": "package sum\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(2, 3) != 5 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n",
	}
	for name, content := range files {
		p := filepath.Join(ws, "sub", name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if os.Getuid() == 0 {
			if err := os.Chown(p, dockerTestUID, dockerTestUID); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func() string {
		var out strings.Builder
		res, err := b.Run(context.Background(), backend.Request{Command: "go test ./...", Dir: "sub", Timeout: 5 * time.Minute, Stdout: &out, Stderr: &out})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("go test: %+v, %v:\n%s", res, err, out.String())
		}
		return out.String()
	}
	if first := run(); !strings.HasPrefix(first, "ok  \texample.com/sum") {
		t.Fatalf("first go test: %q", first)
	}
	if second := run(); !strings.Contains(second, "(cached)") {
		t.Errorf("second go test was not served from the cache: %q", second)
	}
}

// TestDockerPoolClose checks that closing a backend with a warm pool removes the pool's waiting containers.
func TestDockerPoolClose(t *testing.T) {
	b, _ := newDockerTestBackend(t, func(c *Config) { c.WarmPool = 3 })
	dockerSettled(t, b)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if left := dockerInstanceContainers(t, b); len(left) != 0 {
		t.Errorf("%d containers left after Close, want 0", len(left))
	}
	if _, err := os.Stat(b.ctlRoot); !os.IsNotExist(err) {
		t.Errorf("control folder left after Close: %v", err)
	}
}

// TestDockerConcurrentRuns runs commands at the same time on one backend: each gets its own container, output and
// exit code.
func TestDockerConcurrentRuns(t *testing.T) {
	for _, mode := range dockerModes {
		t.Run(mode.name, func(t *testing.T) {
			b, _ := newDockerTestBackend(t, func(c *Config) { c.WarmPool = mode.pool })
			const n = 4
			errs := make(chan error, n)
			for i := range n {
				go func() {
					var out strings.Builder
					res, err := b.Run(context.Background(), backend.Request{Command: fmt.Sprintf("echo run-%d; exit %d", i, i+1),
						Dir: ".", Timeout: time.Minute, Stdout: &out})
					if err == nil && (res.ExitCode != i+1 || out.String() != fmt.Sprintf("run-%d\n", i)) {
						err = fmt.Errorf("run %d: got %+v and %q", i, res, out.String())
					}
					errs <- err
				}()
			}
			for range n {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			dockerSettled(t, b)
		})
	}
}

// panicWriter panics on its first write, as a buggy output writer would.
type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("writer bug") }

// TestDockerRemovedOnPanic checks that a panic while a command runs still removes its container, and reaches the
// caller.
func TestDockerRemovedOnPanic(t *testing.T) {
	b, _ := newDockerTestBackend(t, nil)
	marker := dockerMarker()
	func() {
		defer func() {
			if r := recover(); r != "writer bug" {
				t.Errorf("recovered %v, want the writer's panic", r)
			}
		}()
		_, _ = b.Run(context.Background(), backend.Request{Command: "echo boom; sleep " + marker, Dir: ".", Timeout: time.Minute, Stdout: panicWriter{}})
		t.Error("Run returned; want the writer's panic")
	}()
	if left := dockerInstanceContainers(t, b); len(left) != 0 {
		t.Errorf("%d containers left after the panic, want 0", len(left))
	}
	if p := dockerHostProcesses(t, "sleep "+marker); len(p) != 0 {
		t.Errorf("the command outlived the panic: %v", p)
	}
}

// TestDockerPoolSurvivesLostContainers removes the pool's waiting containers behind its back (as an Engine restart
// would): the next command still runs, and the pool fills again.
func TestDockerPoolSurvivesLostContainers(t *testing.T) {
	b, _ := newDockerTestBackend(t, func(c *Config) { c.WarmPool = 2 })
	dockerSettled(t, b)
	for _, c := range dockerInstanceContainers(t, b) {
		if _, err := b.cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	res, err := b.Run(context.Background(), backend.Request{Command: "echo still works", Dir: ".", Timeout: time.Minute, Stdout: &out})
	if err != nil || res.ExitCode != 0 || out.String() != "still works\n" {
		t.Fatalf("after losing the pool: %+v, %v, %q", res, err, out.String())
	}
	dockerSettled(t, b)
}

// dockerMarker is a number unique to one test run, for sleep lengths that find a command's processes on the host
// even while other test runs sleep too.
func dockerMarker() string {
	return strconv.Itoa(1_000_000 + mathrand.IntN(8_999_999))
}

// dockerGoImage is the Go image (GOALBOX_DOCKER_GO_IMAGE, default golang:1.26-bookworm, which has git too), or the
// test skips — fails when CI=true — where it is missing.
func dockerGoImage(t *testing.T) string {
	t.Helper()
	img := os.Getenv("GOALBOX_DOCKER_GO_IMAGE")
	if img == "" {
		img = "golang:1.26-bookworm"
	}
	cli := dockerRequire(t)
	if _, err := cli.ImageInspect(context.Background(), img); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the Go image %s is missing (scripts/setup-docker.sh builds it): %v", img, err)
		}
		t.Skipf("Go image %s not found (run scripts/setup-docker.sh): %v", img, err)
	}
	return img
}
