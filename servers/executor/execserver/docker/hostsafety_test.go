//go:build linux

package docker

// Attack tests of what the docker backend promises a shared host: each attack, then a positive control
// that shows the attack would have worked without the rule that stopped it.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// dockerRun runs one command and returns its exit code and its stdout and stderr together.
func dockerRun(t testing.TB, b *dockerBackend, req backend.Request) (int, string) {
	t.Helper()
	var out syncBuffer
	req.Stdout, req.Stderr = &out, &out
	if req.Dir == "" {
		req.Dir = "."
	}
	if req.Timeout == 0 {
		req.Timeout = time.Minute
	}
	res, err := b.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("%q: %v", req.Command, err)
	}
	return res.ExitCode, out.String()
}

// requireRoot skips a test of an attack on a root-started server when not root, and fails it under CI=true (CI must
// run it).
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		ciskip.Skip(t, "needs root: the attack is on a root-started server")
	}
}

// rootOnlyFolder is a folder only root may enter, with a file in it: what a user would like the server to hand them.
func rootOnlyFolder(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "root-only")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkUntouched fails when the root-only folder changed owner, mode or content.
func checkUntouched(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 0 || st.Gid != 0 || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Errorf("the root-only folder was changed: owner %d:%d, mode %v", st.Uid, st.Gid, fi.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the root-only folder holds %d entries, want only its secret", len(entries))
	}
}

// userFolder is a folder owned by the workspace's (unprivileged) user, as their home is.
func userFolder(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(dir, dockerTestUID, dockerTestUID); err != nil {
		t.Fatal(err)
	}
	return dir
}

// plantSymlink makes link (and its parents, all the user's) point at target, owned by the user who planted it.
func plantSymlink(t *testing.T, link, target string) {
	t.Helper()
	for d := filepath.Dir(link); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		defer os.Lchown(d, dockerTestUID, dockerTestUID)
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, dockerTestUID, dockerTestUID); err != nil {
		t.Fatal(err)
	}
}

// TestDockerCacheNoPlantedSymlink: a root-started executor with the user's HOME (sudo -E) must
// not create or chown anything through a symlink the user planted: a backend that created and chowned
// $HOME/.cache/goalbox/docker-cache/<instance>, a public name, would hand the user a root-only folder the user
// planted there as a symlink.
func TestDockerCacheNoPlantedSymlink(t *testing.T) {
	requireRoot(t)
	dockerRequire(t)
	ws := dockerWorkspace(t)
	instance := fmt.Sprintf("symlink-test-%d", time.Now().UnixNano())
	base := func(mutate func(*Config)) Config {
		c := Config{Image: dockerTestImage(), WorkspaceHostDir: ws, Instance: instance, Logger: slog.New(slog.DiscardHandler)}
		mutate(&c)
		return c
	}

	t.Run("root server ignores HOME", func(t *testing.T) {
		home := userFolder(t)
		target := rootOnlyFolder(t)
		t.Setenv("HOME", home)
		t.Setenv("XDG_CACHE_HOME", "")
		// Both the old path and the new one, in case the server still looked in HOME.
		plantSymlink(t, filepath.Join(home, ".cache", "goalbox", "docker-cache", instance), target)
		plantSymlink(t, filepath.Join(home, ".cache", "goalbox", "docker", instance), target)
		t.Cleanup(func() { os.RemoveAll(filepath.Join(rootStateBase, instance)) })
		b, err := New(context.Background(), base(func(*Config) {}))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		db := b.(*dockerBackend)
		if !strings.HasPrefix(db.cacheDir, rootStateBase+"/") || !strings.HasPrefix(db.stateDir, rootStateBase+"/") {
			t.Errorf("a root server keeps its state in %s and its cache in %s, want both under %s", db.stateDir, db.cacheDir, rootStateBase)
		}
		checkUntouched(t, target)
		// Positive control: the cache it made instead works for the command user.
		if code, out := dockerRun(t, db, backend.Request{Command: "echo ok > /cache/marker && cat /cache/marker"}); code != 0 || out != "ok\n" {
			t.Errorf("the cache does not work: %d %q", code, out)
		}
	})

	refused := []struct {
		name  string
		setup func(t *testing.T, target string) string // returns the -cache-dir
		want  string
	}{
		{"cache-dir through a user's symlink", func(t *testing.T, target string) string {
			dir := filepath.Join(t.TempDir(), "caches")
			plantSymlink(t, dir, target)
			return dir
		}, "is a symlink owned by uid 4242"},
		{"cache-dir in a user's folder", func(t *testing.T, target string) string {
			return filepath.Join(userFolder(t), "cache")
		}, "belongs to uid 4242"},
		{"cache-dir under a folder anyone can write", func(t *testing.T, target string) string {
			open := filepath.Join(t.TempDir(), "open")
			if err := os.Mkdir(open, 0o777); err != nil {
				t.Fatal(err)
			}
			os.Chmod(open, 0o777)
			return filepath.Join(open, "cache")
		}, "is writable by other users (mode 0777)"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			target := rootOnlyFolder(t)
			cacheDir := c.setup(t, target)
			b, err := New(context.Background(), base(func(cfg *Config) { cfg.CacheHostDir = cacheDir; cfg.stateBase = t.TempDir() }))
			if err == nil {
				b.Close()
				t.Fatalf("started with -cache-dir %s, want a refusal", cacheDir)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "choose a folder owned by the server's user") {
				t.Errorf("error %q, want it to say %q and what is allowed", err, c.want)
			}
			checkUntouched(t, target)
		})
	}

	t.Run("positive control: a root-owned cache-dir and a root-owned symlink", func(t *testing.T) {
		real := filepath.Join(t.TempDir(), "real")
		if err := os.Mkdir(real, 0o755); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(t.TempDir(), "link")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		b, err := New(context.Background(), base(func(cfg *Config) { cfg.CacheHostDir = link; cfg.stateBase = t.TempDir() }))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		db := b.(*dockerBackend)
		if code, out := dockerRun(t, db, backend.Request{Command: "echo ok > /cache/marker && cat /cache/marker"}); code != 0 || out != "ok\n" {
			t.Errorf("the cache does not work: %d %q", code, out)
		}
		fi, err := os.Stat(db.cacheDir)
		if err != nil || !strings.HasPrefix(db.cacheDir, link+"/") {
			t.Fatalf("cache %s: %v", db.cacheDir, err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != dockerTestUID || fi.Mode().Perm() != 0o700 {
			t.Errorf("cache folder owned by %d, mode %v; want the command user's, 0700", st.Uid, fi.Mode())
		}
	})
}

// TestDockerCacheKeyedByWorkspace: a workspace deleted and made again at the same path does not inherit
// the old one's cache, and the old cache is removed.
func TestDockerCacheKeyedByWorkspace(t *testing.T) {
	dockerRequire(t)
	ws := dockerWorkspace(t)
	state, caches := t.TempDir(), t.TempDir()
	instance := fmt.Sprintf("cachekey-test-%d", time.Now().UnixNano())
	open := func() *dockerBackend {
		b, err := New(context.Background(), Config{Image: dockerTestImage(), WorkspaceHostDir: ws, Instance: instance,
			CacheHostDir: caches, stateBase: state, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return b.(*dockerBackend)
	}
	b := open()
	if code, out := dockerRun(t, b, backend.Request{Command: "echo mine > /cache/marker"}); code != 0 {
		t.Fatalf("%d %s", code, out)
	}
	first := b.cacheDir
	b.Close()
	// Positive control: the same workspace keeps its cache.
	b = open()
	if code, out := dockerRun(t, b, backend.Request{Command: "cat /cache/marker"}); code != 0 || out != "mine\n" || b.cacheDir != first {
		t.Fatalf("the same workspace lost its cache: %d %q (%s, was %s)", code, out, b.cacheDir, first)
	}
	b.Close()
	// The attack: the workspace is made again at the same path, by the same user (ext4 hands the freed inode back at
	// once: the birth time tells them apart), then by another user.
	for _, owner := range []int{dockerTestUID, dockerTestUID + 1} {
		if owner == dockerTestUID && birthTime(ws) == "" {
			t.Log("this filesystem keeps no birth time: a workspace made again by the same user may get its inode back")
			continue
		}
		if owner != dockerTestUID && os.Getuid() != 0 {
			continue
		}
		if err := os.RemoveAll(ws); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if os.Getuid() == 0 {
			os.Chown(ws, owner, owner)
		}
		b = open()
		if code, out := dockerRun(t, b, backend.Request{Command: "cat /cache/marker 2>&1; echo mine-too > /cache/marker"}); code != 0 || strings.Contains(out, "mine\n") {
			t.Errorf("the workspace made again by uid %d sees the old one's cache: %d %q", owner, code, out)
		}
		if _, err := os.Stat(first); !os.IsNotExist(err) {
			t.Errorf("the old workspace's cache %s is still there: %v", first, err)
		}
		first = b.cacheDir
		b.Close()
	}
}

// TestDockerSeccomp (items 2 and 10): no set-user-id or set-group-id bits by any call that sets a mode, no
// io_uring, no AF_VSOCK, no x32 system call (the process is killed: the profile admits no foreign ABI). Positive controls: the same chmod works on the host, a plain chmod works in the
// container, and io_uring and vsock work in a plain container with the Engine's default profile.
func TestDockerSeccomp(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the probe uses x86-64 system call numbers")
	}
	cli := dockerRequire(t)
	b, ws := newDockerTestBackend(t, nil)
	if _, out := dockerRun(t, b, backend.Request{Command: "command -v perl || true"}); out == "" {
		t.Skip("the probe is written in perl, which the test image does not have (debian:bookworm-slim has)")
	}
	// perl is in debian:bookworm-slim; each line prints the call's result and errno.
	const probe = `perl -e '
$f = "probe"; open(my $h, ">", $f); close $h;
sub r { my ($n, $v) = @_; print "$n=", ($v >= 0 ? "ok" : "err:" . ($!+0)), "\n" }
r("chmod4755", chmod(04755, $f) ? 0 : -1);
r("chmod2755", chmod(02755, $f) ? 0 : -1);
r("chmod0755", chmod(0755, $f) ? 0 : -1);
r("fchmodat2", syscall(452, -100, $f, 06755, 0));
use Fcntl; r("creat4755", sysopen(my $g, "new-suid", O_CREAT|O_WRONLY, 04755) ? 0 : -1);
r("openplain", sysopen(my $k, "new-plain", O_CREAT|O_WRONLY, 0644) ? 0 : -1);
$fifo = "fifo"; r("mknodsgid", syscall(259, -100, $fifo, 010000 | 02644, 0));
r("io_uring", syscall(425, 1, 0));
r("vsock", syscall(41, 40, 1, 0));
r("unix", syscall(41, 1, 1, 0));
'; perl -e 'syscall(0x40000000 | 39)' 2>/dev/null; echo "x32=$?"; stat -c %a probe new-plain; ls new-suid 2>&1 | head -1`
	code, out := dockerRun(t, b, backend.Request{Command: probe})
	if code != 0 {
		t.Fatalf("probe failed: %d %s", code, out)
	}
	for _, want := range []string{
		"chmod4755=err:1\n", "chmod2755=err:1\n", "chmod0755=ok\n",
		"fchmodat2=err:", // ENOSYS (38) or EPERM (1), either refuses
		"creat4755=err:1\n", "openplain=ok\n", "mknodsgid=err:1\n",
		"io_uring=err:38\n", "vsock=err:", "unix=ok\n", "x32=159\n", "755\n644\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inside the container: want %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "fchmodat2=ok") || strings.Contains(out, "vsock=ok") {
		t.Errorf("a refused call worked:\n%s", out)
	}
	if fi, err := os.Stat(filepath.Join(ws, "probe")); err != nil || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		t.Errorf("probe on the host: %v %v", fi.Mode(), err)
	}

	// Positive control 1: the host lets the same chmod through.
	hostFile := filepath.Join(t.TempDir(), "suid")
	os.WriteFile(hostFile, nil, 0o644)
	if err := syscall.Chmod(hostFile, 0o4755); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(hostFile); fi.Mode()&os.ModeSetuid == 0 {
		t.Fatalf("positive control: chmod 4755 on the host did not set the bit: %v", fi.Mode())
	}
	// Positive control 2: in a plain container with the Engine's default profile, as the same user, io_uring and
	// vsock are not refused by the filter (Docker 20.10's default allows both; a newer Engine's may refuse them,
	// which the control then reports and skips).
	ctx := context.Background()
	plain, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: dockerTestImage(), User: fmt.Sprintf("%d:%d", b.uid, b.gid),
			Cmd: []string{"perl", "-e", `print syscall(425, 1, 0) >= 0 ? "ok" : $!+0, " ", syscall(41, 40, 1, 0) >= 0 ? "ok" : $!+0, " x32:", syscall(0x40000000 | 39) >= 0 ? "ok" : $!+0, "\n"`}},
		HostConfig: &container.HostConfig{NetworkMode: "none", CapDrop: []string{"ALL"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(ctx, plain.ID, client.ContainerRemoveOptions{Force: true})
	att, err := cli.ContainerAttach(ctx, plain.ID, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	if _, err := cli.ContainerStart(ctx, plain.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	var ctl strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := att.Reader.Read(buf)
		ctl.Write(buf[:n])
		if err != nil {
			break
		}
	}
	// io_uring_setup(1, NULL) gets EFAULT (14) from the kernel once the filter lets it through; vsock a socket or
	// EAFNOSUPPORT (97) where the kernel has no vsock.
	// (A newer Engine's default refuses both; then this control cannot be made and says so.) The x32 getpid gets
	// past the default profile (ENOSYS where the kernel has x32 off, as here, or a pid), where ours kills the
	// process (SIGSYS: 128+31).
	got := ctl.String()
	if !strings.Contains(got, " x32:38") && !strings.Contains(got, " x32:ok") {
		t.Errorf("positive control: with the Engine's default profile an x32 getpid gave %q", got)
	}
	if !strings.Contains(got, "14 ok") && !strings.Contains(got, "14 97") {
		t.Errorf("positive control: with the Engine's default profile io_uring_setup and socket(AF_VSOCK) gave %q, want 14 (EFAULT: not filtered) and ok", got)
	}
}

// TestDockerModeSweep: what a command leaves world-writable, or set-user-id where the profile could not
// stop it (planted here from the host, as an archive extracted by an older daemon would), is cleared after the
// command, and while a long process runs; a symlink in the workspace to a file outside is not followed. Without the
// workspace layer, where commands write the workspace themselves (with it a folder's mode never lands at all, and
// the sweep after the guard's apply is the same walk).
func TestDockerModeSweep(t *testing.T) {
	b, ws := newDockerTestBackend(t, func(c *Config) { c.NoWorkspaceLayer = true })
	outside := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(outside, nil, 0o666)
	syscall.Chmod(outside, 0o4777)
	if err := os.Symlink(outside, filepath.Join(ws, "link-out")); err != nil {
		t.Fatal(err)
	}
	suid := filepath.Join(ws, "suid-sh")
	os.WriteFile(suid, []byte("#!/bin/sh\n"), 0o755)
	os.Lchown(suid, dockerTestUID, dockerTestUID)
	if err := syscall.Chmod(suid, 0o6711); err != nil { // even unreadable to its owner
		t.Fatal(err)
	}
	code, out := dockerRun(t, b, backend.Request{Command: `chmod 0777 . sub && mkdir -p sub/deep && chmod 1777 sub/deep &&
		touch sub/deep/w && chmod 0666 sub/deep/w && stat -c %a . sub sub/deep sub/deep/w`})
	// Positive control: inside, the modes were set.
	if code != 0 || !strings.HasPrefix(out, "777\n777\n1777\n666\n") {
		t.Fatalf("the command could not set the modes: %d %q", code, out)
	}
	if !strings.Contains(out, "[goalbox: cleared set-user-id, set-group-id and world-write bits on") {
		t.Errorf("the command was not told: %q", out)
	}
	for rel, want := range map[string]os.FileMode{".": 0o775, "sub": 0o775, "sub/deep": 0o775 | os.ModeSticky, "sub/deep/w": 0o664, "suid-sh": 0o711} {
		fi, err := os.Lstat(filepath.Join(ws, rel))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() &^ os.ModeType; got != want {
			t.Errorf("%s: mode %v after the sweep, want %v", rel, got, want)
		}
	}
	if fi, _ := os.Stat(outside); fi.Mode()&^os.ModeType != 0o777|os.ModeSetuid {
		t.Errorf("the sweep followed a symlink out of the workspace: %s is now %v", outside, fi.Mode())
	}

	// A long process: its chmod is cleared while it runs, within a sweep period. Positive control: the process
	// itself saw the mode it set.
	old := sweepEvery
	sweepEvery = 500 * time.Millisecond
	t.Cleanup(func() { sweepEvery = old })
	done := runInBackground(t, context.Background(), b, backend.Request{Command: "chmod 0777 sub && stat -c %a sub > seen && sleep 30",
		Dir: ".", Timeout: time.Minute})
	dockerWaitFor(t, 30*time.Second, "the process to make sub world-writable", func() bool {
		got, _ := os.ReadFile(filepath.Join(ws, "seen"))
		return string(got) == "777\n"
	})
	dockerWaitFor(t, 10*time.Second, "a sweep while the process runs", func() bool {
		fi, err := os.Stat(filepath.Join(ws, "sub"))
		return err == nil && fi.Mode().Perm() == 0o775
	})
	select {
	case r := <-done:
		t.Fatalf("the process ended before its sweep was seen: %+v", r)
	default:
	}
}

// TestDockerNoHealthcheck: an image's HEALTHCHECK never runs in a command's, pool's or holder's container.
// Positive control: a plain container of the same image runs it.
func TestDockerNoHealthcheck(t *testing.T) {
	cli := dockerRequire(t)
	ctx := context.Background()
	// An image with a health check, made from the test image without pulling or building.
	base, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: dockerTestImage(), Cmd: []string{"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(ctx, base.ID, client.ContainerRemoveOptions{Force: true})
	image := fmt.Sprintf("goalbox-test/healthcheck:%d", time.Now().UnixNano())
	if _, err := cli.ContainerCommit(ctx, base.ID, client.ContainerCommitOptions{Reference: image,
		Changes: []string{`HEALTHCHECK --interval=1s CMD ["true"]`}}); err != nil {
		t.Fatal(err)
	}
	defer cli.ImageRemove(ctx, image, client.ImageRemoveOptions{Force: true})

	b, _ := newDockerTestBackend(t, func(c *Config) { c.Image = image; c.WarmPool = 1 })
	done := runInBackground(t, ctx, b, backend.Request{Command: "sleep 3", Dir: ".", Timeout: time.Minute})
	time.Sleep(2500 * time.Millisecond)
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", labelInstance+"="+b.cfg.Instance)})
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]bool{}
	for _, c := range list.Items {
		insp, err := cli.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
		if err != nil {
			continue
		}
		roles[c.Labels[labelRole]] = true
		if insp.Container.State != nil && insp.Container.State.Health != nil {
			t.Errorf("%s container %.12s has a health check: %+v", c.Labels[labelRole], c.ID, insp.Container.State.Health)
		}
	}
	if !roles[roleCommand] || !roles[roleNetwork] {
		t.Errorf("saw roles %v, want command (running and pooled) and network", roles)
	}
	awaitRun(t, done, time.Minute)

	// Positive control.
	plain, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: image, Cmd: []string{"sleep", "5"}},
		HostConfig: &container.HostConfig{NetworkMode: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(ctx, plain.ID, client.ContainerRemoveOptions{Force: true})
	cli.ContainerStart(ctx, plain.ID, client.ContainerStartOptions{})
	dockerWaitFor(t, 10*time.Second, "the plain container's health check to run", func() bool {
		insp, err := cli.ContainerInspect(ctx, plain.ID, client.ContainerInspectOptions{})
		return err == nil && insp.Container.State.Health != nil && len(insp.Container.State.Health.Log) > 0
	})
}

// TestDockerMountinfo: the only host paths a command finds in /proc/self/mountinfo are the workspace's
// own, the instance's state and cache folders, and Docker's own storage (with the workspace layer, the overlay's
// lower is the server's descriptor, /proc/self/fd/N, and its upper a folder of the state). Positive control: the
// same command sees the workspace's path there (the state folder's, with the layer), so the check reads what it
// means to.
func TestDockerMountinfo(t *testing.T) {
	cache := t.TempDir()
	b, ws := newDockerTestBackend(t, func(c *Config) { c.CacheHostDir = cache })
	code, out := dockerRun(t, b, backend.Request{Command: "cat /proc/self/mountinfo"})
	if code != 0 {
		t.Fatalf("%d %s", code, out)
	}
	allowed := []string{ws, b.stateDir + "/", b.cacheDir, "/var/lib/docker/", "/docker/", "/proc/self/fd/"}
	seen := ws
	if b.layered {
		seen = b.ctlRoot
	}
	if b.cgroupParent != "" {
		allowed = append(allowed, b.cgroupParent+"/") // the totals' cgroup, in the cgroup mounts' roots (cgroup_linux.go)
	}
	sawWorkspace := false
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		// The root of the mount in its filesystem, then the super options' paths (overlay's lowerdir...).
		paths := []string{f[3]}
		if i := strings.Index(line, " - "); i >= 0 {
			for _, opt := range strings.FieldsFunc(line[i:], func(r rune) bool { return r == ',' || r == ':' || r == '=' || r == ' ' }) {
				if strings.HasPrefix(opt, "/") {
					paths = append(paths, opt)
				}
			}
		}
		for _, p := range paths {
			if p == "/" || strings.HasPrefix(p, "/dev/") || !strings.Contains(p[1:], "/") && !strings.HasPrefix(p, "/tmp") && !strings.HasPrefix(p, "/home") {
				continue // a filesystem's root, a device, or a single name in procfs/sysfs (/bus, /null)
			}
			if p == seen || strings.HasPrefix(p, seen+"/") {
				sawWorkspace = true
			}
			ok := false
			for _, a := range allowed {
				if p == a || strings.HasPrefix(p, strings.TrimSuffix(a, "/")+"/") {
					ok = true
				}
			}
			if !ok {
				t.Errorf("mountinfo names the host path %s:\n%s", p, line)
			}
		}
	}
	if !sawWorkspace {
		t.Errorf("positive control: %s is not in mountinfo:\n%s", seen, out)
	}
}
