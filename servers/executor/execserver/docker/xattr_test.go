//go:build linux

package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"
)

// aclProbe sets, with perl's syscall (perl-base is in debian:bookworm-slim), an access ACL granting uid 4243 rwx
// on the workspace and on a file, a default ACL on the workspace, a user attribute and a file capability, through
// setxattr, lsetxattr and fsetxattr (x86-64 numbers), and prints each call's errno.
const aclProbe = `perl -e '
my $e = sub { pack("vvV", @_) };
my $acl = pack("V", 2) . $e->(1, 7, ~0) . $e->(2, 7, 4243) . $e->(4, 5, ~0) . $e->(0x10, 7, ~0) . $e->(0x20, 5, ~0);
sub r { my ($n, $v) = @_; print "$n=", ($v >= 0 ? "ok" : "err:" . ($!+0)), "\n" }
my ($w, $f, $pa, $pd, $um, $sc, $x) = ("/workspace", "f", "system.posix_acl_access", "system.posix_acl_default", "user.mark", "security.capability", "x");
open(my $h, ">", $f); close $h;
r("acl", syscall(188, $w, $pa, $acl, length $acl, 0));
r("default", syscall(188, $w, $pd, $acl, length $acl, 0));
r("lacl", syscall(189, $f, $pa, $acl, length $acl, 0));
r("user", syscall(188, $f, $um, $x, 1, 0));
open(my $g, "<", $f); r("fuser", syscall(190, fileno($g), $um, $x, 1, 0));
my $cap = pack("VVVVV", 0x02000001, 1 << 21, 0, 0, 0);
r("cap", syscall(188, $f, $sc, $cap, length $cap, 0));
'`

// TestDockerNoACLs: no ACL, default ACL, extended attribute or file capability reaches the workspace from a
// command (the mode sweep does not see ACLs: another uid could get rwx). Tools that copy attributes go on. Positive
// control: the same probe in a plain container of the same user with the Engine's default profile sets the ACLs
// and the user attribute, and the host reads them back.
func TestDockerNoACLs(t *testing.T) {
	cli := dockerRequire(t)
	b, ws := newDockerTestBackend(t, nil)
	if _, out := dockerRun(t, b, backend.Request{Command: "command -v perl || true"}); out == "" {
		t.Skip("the probe is written in perl, which the test image does not have (debian:bookworm-slim has)")
	}
	code, out := dockerRun(t, b, backend.Request{Command: aclProbe})
	if code != 0 {
		t.Fatalf("probe: %d %s", code, out)
	}
	for _, call := range []string{"acl", "default", "lacl", "user", "fuser", "cap"} {
		if !strings.Contains(out, call+"=err:95\n") {
			t.Errorf("%s: want EOPNOTSUPP (95) in\n%s", call, out)
		}
	}
	hostHasNoXattrs(t, ws)

	// Tools that keep attributes where they can still work: the host gives a file an attribute, and cp -a, cp
	// --preserve=all (silently) and tar --xattrs (with a warning, exit status 0) copy it in the command without one.
	if err := unix.Setxattr(filepath.Join(ws, dockerSentinelName), "user.origin", []byte("host"), 0); err != nil {
		t.Fatal(err)
	}
	tools := `cp -a sentinel.txt a && cp --preserve=all sentinel.txt b && tar --xattrs -cf /tmp/t.tar sentinel.txt &&
		mkdir x && tar --xattrs -xf /tmp/t.tar -C x 2>/dev/null && cat a b x/sentinel.txt | wc -l`
	if code, out := dockerRun(t, b, backend.Request{Command: tools}); code != 0 || out != "3\n" {
		t.Errorf("copying tools in the command: %d %q", code, out)
	}

	// Positive control.
	ctl := dockerWorkspace(t)
	ctx := context.Background()
	plain, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: dockerTestImage(), User: fmt.Sprintf("%d:%d", b.uid, b.gid), WorkingDir: "/workspace",
			Entrypoint: []string{"sh", "-c", aclProbe}},
		HostConfig: &container.HostConfig{NetworkMode: "none", CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"},
			Mounts: []mount.Mount{{Type: mount.TypeBind, Source: ctl, Target: "/workspace"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(ctx, plain.ID, client.ContainerRemoveOptions{Force: true})
	got := plainOutput(t, cli, plain.ID)
	for _, call := range []string{"acl", "default", "lacl", "user", "fuser"} {
		if !strings.Contains(got, call+"=ok\n") {
			t.Errorf("positive control: %s did not work in a plain container:\n%s", call, got)
		}
	}
	buf := make([]byte, 256)
	if n, err := unix.Getxattr(ctl, "system.posix_acl_access", buf); err != nil || n == 0 {
		t.Errorf("positive control: the host reads no ACL on the workspace: %v", err)
	}
}

// hostHasNoXattrs fails when any file or folder of the workspace carries an extended attribute.
func hostHasNoXattrs(t *testing.T, ws string) {
	t.Helper()
	filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		buf := make([]byte, 1024)
		if n, _ := unix.Llistxattr(p, buf); n > 0 {
			t.Errorf("%s carries extended attributes: %q", p, buf[:n])
		}
		return nil
	})
}
