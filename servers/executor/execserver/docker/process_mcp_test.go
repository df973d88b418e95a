//go:build linux

package docker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dockerServeWorkspace is a command that serves the workspace (its folder) over HTTP on 127.0.0.1:port with the
// first server the image has: python3's http.server (the executor's image), busybox's httpd (busybox) or an
// HTTP/1.0 file server in perl, which Debian's minimal base has. It prints "serving" before it starts.
func dockerServeWorkspace(port int) string {
	return fmt.Sprintf(`if command -v python3 >/dev/null; then echo serving >&2; exec python3 -m http.server %[1]d --bind 127.0.0.1
elif command -v httpd >/dev/null; then echo serving >&2; exec httpd -f -p 127.0.0.1:%[1]d -h .
elif command -v perl >/dev/null; then echo serving >&2; exec perl -MIO::Socket::INET -e '
	my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1:%[1]d", Listen => 5, ReuseAddr => 1) or die "listen: $!";
	while (my $c = $s->accept) {
		my ($path) = (scalar <$c>) =~ m{^GET /(\S*)};
		while (<$c>) { last if /^\r?$/ }
		if (defined $path && open(my $f, "<", $path)) { local $/; print $c "HTTP/1.0 200 OK\r\n\r\n", <$f> }
		else { print $c "HTTP/1.0 404 Not Found\r\n\r\n" }
		close $c;
	}'
else echo "no HTTP server (python3, httpd, perl) in the image" >&2; exit 99; fi`, port)
}

// dockerFetch prints the body of http://127.0.0.1:port/path with what the image has (curl, bash's /dev/tcp or
// nc), retrying while the server is not up yet; it fails unless the answer is a 200.
func dockerFetch(port int, path string) string {
	return fmt.Sprintf(`cr=$(printf '\r'); r=/tmp/fetched
for i in 1 2 3 4 5 6 7 8 9 10; do
	if command -v curl >/dev/null; then curl -sf http://127.0.0.1:%[1]d%[2]s && exit 0
	else
		if command -v bash >/dev/null; then timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/%[1]d && printf "GET %[2]s HTTP/1.0\r\n\r\n" >&3 && cat <&3' > $r
		else printf 'GET %[2]s HTTP/1.0\r\n\r\n' | timeout 5 nc 127.0.0.1 %[1]d > $r; fi
		if head -n 1 $r | grep -q ' 200 '; then sed "1,/^$cr\$/d" $r; exit 0; fi
	fi
	sleep 1
done
exit 1`, port, path)
}

// TestDockerProcesses runs the process tools' contract (the same as the local backend's) over MCP on the docker
// backend, cold and with a warm pool: a server started as a process answers sandbox_run_command over the backend's
// shared loopback and the host does not reach it; output by offsets; stdin; stop and a closed session end the whole
// tree (checked in the host's /proc); the cap; another session. Then no command container is left.
func TestDockerProcesses(t *testing.T) {
	for _, mode := range dockerModes {
		t.Run(mode.name, func(t *testing.T) {
			b, ws := newDockerTestBackend(t, func(c *Config) { c.WarmPool = mode.pool })
			const maxProcesses = 3
			srv := sandboxtest.StartServer(t, b, ws, execserver.Config{MaxProcesses: maxProcesses}, nil)
			sandboxtest.RunProcesses(t, srv, ws, sandboxtest.ProcessTarget{
				Serve:        dockerServeWorkspace,
				Fetch:        dockerFetch,
				MaxProcesses: maxProcesses,
			})
			// Every process was stopped, ended or went with its session: its container is gone too.
			dockerSettled(t, b)
		})
	}
}

// TestDockerProcessIDsPerSession: each session numbers its own processes from p1, so an id says nothing of what
// other sessions started. Positive control: a session's second process is p2.
func TestDockerProcessIDsPerSession(t *testing.T) {
	b, ws := newDockerTestBackend(t, nil)
	srv := sandboxtest.StartServer(t, b, ws, execserver.Config{MaxProcesses: 3}, nil)
	start := func(cs *mcp.ClientSession) string {
		return sandboxtest.MustCall[protocol.StartProcessOutput](t, cs, protocol.ToolStartProcess,
			protocol.StartProcessInput{Command: "sleep 30"}).ProcessID
	}
	if a, b := start(srv.Session), start(srv.Session); a != "p1" || b != "p2" {
		t.Errorf("one session's processes: %s, %s; want p1, p2", a, b)
	}
	if id := start(sandboxtest.Connect(t, srv)); id != "p1" {
		t.Errorf("a fresh session's first process is %s, want p1", id)
	}
}

// TestDockerProcessQueued: with room for two containers under the total caps, a third process waits for room and
// is answered, listed and read as queued, not running, until a container ends; then it runs. Positive control: the
// first two are answered as running.
func TestDockerProcessQueued(t *testing.T) {
	const mem = 64 << 20
	b, ws := newDockerTestBackend(t, func(c *Config) { c.Memory = mem; c.TotalMemory = 2 * mem })
	srv := sandboxtest.StartServer(t, b, ws, execserver.Config{MaxProcesses: 3}, nil)
	start := func(cmd string) protocol.StartProcessOutput {
		return sandboxtest.MustCall[protocol.StartProcessOutput](t, srv.Session, protocol.ToolStartProcess,
			protocol.StartProcessInput{Command: cmd})
	}
	read := func(id string) protocol.ReadProcessOutputOutput {
		return sandboxtest.MustCall[protocol.ReadProcessOutputOutput](t, srv.Session, protocol.ToolReadProcessOutput,
			protocol.ReadProcessOutputInput{ProcessID: id})
	}
	first, second := start("sleep 60"), start("sleep 60")
	if first.Queued || second.Queued {
		t.Fatalf("with room, the first two processes are answered as queued: %+v %+v", first, second)
	}
	third := start("echo ran")
	if !third.Queued {
		t.Fatalf("a process waiting for room is answered as started: %+v", third)
	}
	if r := read(third.ProcessID); !r.Queued || r.Running || r.ExitCode != nil {
		t.Errorf("a queued process reads as %+v, want queued and not running", r)
	}
	list := sandboxtest.MustCall[protocol.ListProcessesOutput](t, srv.Session, protocol.ToolListProcesses, struct{}{})
	for _, p := range list.Processes {
		if p.ProcessID == third.ProcessID && (!p.Queued || p.Running) {
			t.Errorf("listed as %+v, want queued", p)
		}
	}
	sandboxtest.MustCall[protocol.StopProcessOutput](t, srv.Session, protocol.ToolStopProcess, protocol.StopProcessInput{ProcessID: first.ProcessID})
	dockerWaitFor(t, 30*time.Second, "the queued process to run and end", func() bool {
		r := read(third.ProcessID)
		return r.ExitCode != nil && *r.ExitCode == 0 && strings.Contains(r.Stdout, "ran") && !r.Queued
	})
}
