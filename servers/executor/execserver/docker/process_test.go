//go:build linux

package docker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// The tests of what long-running processes need from the backend: a standard input that stays open, a SIGTERM
// for the whole tree, and one loopback shared by all commands of a backend.

// syncBuffer is an output writer the test reads while the command still writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runResult is how a Run started in the background ended.
type runResult struct {
	res backend.Result
	err error
}

// runInBackground starts b.Run(ctx, req) and returns where its result arrives. When the test ends, failed or not,
// the Run is cancelled and waited for, so no container outlives it.
func runInBackground(t *testing.T, ctx context.Context, b *dockerBackend, req backend.Request) <-chan runResult {
	ctx, cancel := context.WithCancel(ctx)
	done, finished := make(chan runResult, 1), make(chan struct{})
	go func() {
		defer close(finished)
		res, err := b.Run(ctx, req)
		done <- runResult{res, err}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(30 * time.Second):
			t.Errorf("a cancelled Run did not return within 30s")
		}
	})
	return done
}

// awaitRun waits for a background Run's result, at most limit.
func awaitRun(t *testing.T, done <-chan runResult, limit time.Duration) runResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(limit):
		t.Fatalf("Run did not return within %v", limit)
		return runResult{}
	}
}

// TestDockerStdinStream writes a command's standard input in pieces, each only after the command answered the one
// before: the data reaches the command as it comes, not at EOF, and closing the stream is the command's EOF.
func TestDockerStdinStream(t *testing.T) {
	for _, mode := range dockerModes {
		t.Run(mode.name, func(t *testing.T) {
			b, _ := newDockerTestBackend(t, func(c *Config) { c.WarmPool = mode.pool })
			in, feed := io.Pipe()
			var out syncBuffer
			done := runInBackground(t, context.Background(), b, backend.Request{
				Command: `while read -r line; do echo "got $line"; done; echo eof`, Dir: ".", Timeout: 2 * time.Minute,
				StdinStream: in, Stdout: &out, Stderr: &out})
			want := ""
			for _, piece := range []string{"one", "two", "three"} {
				if _, err := io.WriteString(feed, piece+"\n"); err != nil {
					t.Fatal(err)
				}
				want += "got " + piece + "\n"
				dockerWaitFor(t, 30*time.Second, fmt.Sprintf("the command to answer %q", piece), func() bool {
					return out.String() == want
				})
			}
			feed.Close()
			r := awaitRun(t, done, 30*time.Second)
			if r.err != nil || r.res.ExitCode != 0 || out.String() != want+"eof\n" {
				t.Errorf("got %+v, %v, output %q", r.res, r.err, out.String())
			}
			dockerSettled(t, b)
		})
	}
}

// TestDockerTerminate closes Request.Terminate: every process of the command gets SIGTERM — a background child, a
// setsid'd orphan and the command's shell itself each write a marker from their trap, checked on the host — and a
// command that ends on it ends Run with its shell's status.
func TestDockerTerminate(t *testing.T) {
	for _, mode := range dockerModes {
		t.Run(mode.name, func(t *testing.T) {
			b, ws := newDockerTestBackend(t, func(c *Config) { c.WarmPool = mode.pool })

			t.Run("the whole tree", func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				terminate := make(chan struct{})
				var out syncBuffer
				// The shell traps TERM and goes on, so the container lives until the test cancels: the markers
				// are written by the processes themselves, not raced by the container's end. "ready" comes once
				// every trap is set.
				done := runInBackground(t, ctx, b, backend.Request{Command: `
					sh -c 'trap "echo > term-child; exit 0" TERM; echo > up-child; while :; do sleep 1; done' &
					(setsid sh -c 'trap "echo > term-orphan; exit 0" TERM; echo > up-orphan; while :; do sleep 1; done' &)
					trap 'echo > term-shell' TERM
					until [ -e up-child ] && [ -e up-orphan ]; do sleep 1; done
					echo ready
					while :; do sleep 1; done`,
					Dir: ".", Timeout: 2 * time.Minute, Terminate: terminate, Stdout: &out, Stderr: &out})
				dockerWaitFor(t, 30*time.Second, "the command to start", func() bool { return strings.Contains(out.String(), "ready") })
				close(terminate)
				for _, m := range []string{"term-child", "term-orphan", "term-shell"} {
					dockerWaitFor(t, 30*time.Second, m+" to be written by its process's trap", func() bool {
						_, err := os.Stat(filepath.Join(ws, m))
						return err == nil
					})
				}
				// Cancelling still kills at once, the shell that ignored the SIGTERM included.
				cancel()
				if r := awaitRun(t, done, 30*time.Second); r.err != nil || r.res.ExitCode != -1 {
					t.Errorf("after cancelling got %+v, %v; want exit -1", r.res, r.err)
				}
				dockerSettled(t, b)
			})

			t.Run("a command that ends on it", func(t *testing.T) {
				terminate := make(chan struct{})
				marker := dockerMarker()
				start := time.Now()
				done := runInBackground(t, context.Background(), b, backend.Request{Command: "exec sleep " + marker,
					Dir: ".", Timeout: 2 * time.Minute, Terminate: terminate})
				dockerWaitFor(t, 30*time.Second, "the command to start", func() bool {
					return len(dockerHostProcesses(t, "sleep "+marker)) > 0
				})
				close(terminate)
				// sleep is the only process of the command, and not the container's init: SIGTERM ends it (as init
				// it would ignore the signal), and its status is 128+15.
				r := awaitRun(t, done, 30*time.Second)
				if r.err != nil || r.res.ExitCode != 143 || r.res.TimedOut {
					t.Errorf("got %+v, %v after %v; want exit 143 (SIGTERM)", r.res, r.err, time.Since(start))
				}
				if left := dockerHostProcesses(t, "sleep "+marker); len(left) != 0 {
					t.Errorf("processes left: %v", left)
				}
				dockerSettled(t, b)
			})
		})
	}
}

// loopbackServer is a shell command serving one line of text over HTTP on 127.0.0.1:port with what the image has
// (python3, perl or busybox httpd); loopbackFetch prints what that port answers (curl, bash's /dev/tcp or nc; busybox's
// wget -q crashes here).
func loopbackServer(port int, text string) string {
	return fmt.Sprintf(`mkdir -p /tmp/www && echo %[2]s > /tmp/www/index.html
if command -v python3 >/dev/null; then exec python3 -m http.server %[1]d --bind 127.0.0.1 --directory /tmp/www
elif command -v perl >/dev/null; then exec perl -MIO::Socket::INET -e '
	$s = IO::Socket::INET->new(LocalAddr => "127.0.0.1:%[1]d", Listen => 5, ReuseAddr => 1) or die "listen: $!";
	while ($c = $s->accept) { while (<$c>) { last if /^\r?$/ } print $c "HTTP/1.0 200 OK\r\n\r\n%[2]s\n"; close $c }'
elif command -v httpd >/dev/null; then exec httpd -f -p 127.0.0.1:%[1]d -h /tmp/www
else echo "no server tool (python3, perl, httpd) in the image" >&2; exit 99; fi`, port, text)
}

func loopbackFetch(port int) string {
	return fmt.Sprintf(`if command -v curl >/dev/null; then curl -s -m 5 http://127.0.0.1:%[1]d/
elif command -v bash >/dev/null; then timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/%[1]d && printf "GET / HTTP/1.0\r\n\r\n" >&3 && cat <&3'
elif command -v nc >/dev/null; then printf "GET / HTTP/1.0\r\n\r\n" | timeout 5 nc 127.0.0.1 %[1]d
else echo "no client tool (curl, bash, nc) in the image" >&2; exit 99; fi`, port)
}

// TestDockerProcessesShareLoopback starts a server as one Run that keeps running and fetches from it in later,
// concurrent Runs of the same backend: they share a loopback. Another backend's command and the host do not reach
// it, and a command still sees only lo.
func TestDockerProcessesShareLoopback(t *testing.T) {
	for _, mode := range dockerModes {
		t.Run(mode.name, func(t *testing.T) {
			b, _ := newDockerTestBackend(t, func(c *Config) { c.WarmPool = mode.pool })
			port := 20000 + mathrand.IntN(30000)
			text := fmt.Sprintf("served-by-the-process-%d", mathrand.Int64())
			terminate := make(chan struct{})
			var serverOut syncBuffer
			done := runInBackground(t, context.Background(), b, backend.Request{Command: loopbackServer(port, text),
				Dir: ".", Timeout: 2 * time.Minute, Terminate: terminate, Stdout: &serverOut, Stderr: &serverOut})
			defer func() {
				select {
				case <-terminate:
				default:
					close(terminate)
				}
			}()

			fetch := func(t *testing.T, on *dockerBackend) string {
				t.Helper()
				var out strings.Builder
				if _, err := on.Run(context.Background(), backend.Request{Command: loopbackFetch(port), Dir: ".",
					Timeout: time.Minute, Stdout: &out, Stderr: &out}); err != nil {
					t.Fatal(err)
				}
				return out.String()
			}
			// The server takes a moment to listen; until then a fetch is refused.
			var got string
			deadline := time.Now().Add(60 * time.Second)
			for !strings.Contains(got, text) {
				select {
				case r := <-done:
					t.Fatalf("the server ended: %+v, %v, output %q", r.res, r.err, serverOut.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("a later command never reached the server; last fetch %q, server output %q", got, serverOut.String())
				}
				got = fetch(t, b)
			}

			t.Run("another backend", func(t *testing.T) {
				other, _ := newDockerTestBackend(t, nil)
				if got := fetch(t, other); strings.Contains(got, text) {
					t.Errorf("another backend's command reached the server: %q", got)
				}
			})
			t.Run("the host", func(t *testing.T) {
				// Positive control: hostFetch does reach a server on the host's own loopback.
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						fmt.Fprintf(c, "HTTP/1.0 200 OK\r\n\r\nhost-%s\n", text)
						c.Close()
					}
				}()
				if got := hostFetch(ln.Addr().(*net.TCPAddr).Port); !strings.Contains(got, "host-"+text) {
					t.Fatalf("positive control: hostFetch got %q from a listener on the host", got)
				}
				if got := hostFetch(port); strings.Contains(got, text) {
					t.Errorf("the host reached the server: %q", got)
				}
			})
			t.Run("only lo", func(t *testing.T) {
				var out strings.Builder
				if _, err := b.Run(context.Background(), backend.Request{Command: "ls /sys/class/net; hostname", Dir: ".",
					Timeout: time.Minute, Stdout: &out}); err != nil || out.String() != "lo\nsandbox\n" {
					t.Errorf("got %q, %v; want only lo, host name sandbox", out.String(), err)
				}
			})

			close(terminate)
			if r := awaitRun(t, done, 30*time.Second); r.err != nil || r.res.ExitCode != 143 {
				t.Errorf("the server ended with %+v, %v; want 143 (SIGTERM); output %q", r.res, r.err, serverOut.String())
			}
			dockerSettled(t, b)
		})
	}
}

// hostFetch is what a host process gets from 127.0.0.1:port: "" when nothing listens there.
func hostFetch(port int) string {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 3*time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
	b, _ := io.ReadAll(bufio.NewReader(c))
	return string(b)
}

// dockerNetworkHolders lists b's network holders, running or not.
func dockerNetworkHolders(t testing.TB, b *dockerBackend) []container.Summary {
	t.Helper()
	list, err := b.cli.ContainerList(context.Background(), client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("label", labelInstance+"="+b.cfg.Instance, labelRole+"="+roleNetwork),
	})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestDockerNetworkHolder checks the network holder's life: one per backend, confined like a command's container;
// removed behind the backend's back, it is replaced by the next command; Close removes it.
func TestDockerNetworkHolder(t *testing.T) {
	b, _ := newDockerTestBackend(t, func(c *Config) { c.WarmPool = 1 })
	holders := dockerNetworkHolders(t, b)
	if len(holders) != 1 || holders[0].State != container.StateRunning {
		t.Fatalf("want one running network holder, got %+v", holders)
	}
	insp, err := b.cli.ContainerInspect(context.Background(), holders[0].ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc, cfg := insp.Container.HostConfig, insp.Container.Config
	if hc.NetworkMode != "none" || !hc.ReadonlyRootfs || len(hc.CapDrop) != 1 || hc.CapDrop[0] != "ALL" ||
		cfg.User != fmt.Sprintf("%d:%d", b.uid, b.gid) || hc.PidsLimit == nil || *hc.PidsLimit != networkHolderPIDs {
		t.Errorf("the holder is not confined: network %q, read-only %v, cap drop %v, user %q, pids %v",
			hc.NetworkMode, hc.ReadonlyRootfs, hc.CapDrop, cfg.User, hc.PidsLimit)
	}

	// Gone behind the backend's back (as after an Engine restart): commands still run. The first may take the warm
	// container that joined the old holder's namespace (it lives on with that container); the next container to
	// start, the pool's refill, finds the holder gone and starts a new one, which later commands join.
	if _, err := b.cli.ContainerRemove(context.Background(), holders[0].ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
		t.Fatal(err)
	}
	for i := range 2 {
		var out strings.Builder
		res, err := b.Run(context.Background(), backend.Request{Command: "echo still works; ls /sys/class/net", Dir: ".", Timeout: time.Minute, Stdout: &out})
		if err != nil || res.ExitCode != 0 || out.String() != "still works\nlo\n" {
			t.Fatalf("command %d after losing the holder: %+v, %v, %q", i, res, err, out.String())
		}
	}
	renewed := dockerNetworkHolders(t, b)
	if len(renewed) != 1 || renewed[0].ID == holders[0].ID || renewed[0].ID != b.net.current() {
		t.Errorf("want one new holder, got %+v", renewed)
	}
	dockerSettled(t, b)

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if left := dockerNetworkHolders(t, b); len(left) != 0 {
		t.Errorf("%d network holders left after Close", len(left))
	}
}
