//go:build linux

// Package sandboxtest holds what the local and the docker backend's tests share: the containment suite (a table of
// hostile commands, RunContainment) and the helpers that serve an executor over a backend on loopback HTTP and call
// it (StartServer, CallRun, MustRun). Go test files cannot be imported across packages, so these live here; only
// tests import this package.
package sandboxtest

// The containment suite: hostile commands sent through the real MCP server, each followed by checks that the attack
// failed, that the server still answers and that the workspace is intact (a sentinel file's hash).
//
// RunContainment is backend-neutral: every check looks at the host (files next to the workspace, the host's
// /proc, a listener on the host), never at what the command claims. Both backends' tests run the same table:
//
//	sandboxtest.RunContainment(t, sandboxtest.Target{NewBackend: func(t *testing.T) (backend.Backend, string) { ... }})
//
// NewBackend is called after the secret is put into the test process's environment, so the backend (and the
// server) hold it the way a real server holds its API keys.

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// containmentSecretEnv is set in the server's own environment; no command may see its value.
const containmentSecretEnv = "GOALBOX_TEST_SECRET"

// Target is a backend under attack.
type Target struct {
	// NewBackend builds the backend over a fresh workspace (its host path is returned).
	NewBackend func(t *testing.T) (backend.Backend, string)
	// MemoryBomb is how many bytes a python3 allocation asks for that the backend's memory limit must refuse;
	// 0 skips the memory bomb.
	MemoryBomb int64
	// ForkBomb runs the fork bomb; only for backends with a process limit (the local backend runs as the server's
	// user, and RLIMIT_NPROC does not bind root).
	ForkBomb bool
	// HugeOutput is how many bytes the huge-output attack prints on stdout (0: 2 GB, plus 300 MB on stderr). A
	// backend that streams slowly may ask for less; the attack's timeout allows 10 MB/s.
	HugeOutput int64
	// KnownGaps names attacks this backend is not expected to stop, with the reason (reported, not failed).
	KnownGaps map[string]string
	// NoPython says the commands have no python3 (a minimal image): attacks written in it are skipped, said so.
	NoPython bool
}

type containmentEnv struct {
	t          *testing.T
	cs         *mcp.ClientSession
	ws         string
	parent     string
	nonce      string
	secret     string
	serverPort string
	hits       *atomic.Int64
	hostPort   string
	// egressIP is one of this machine's own addresses beyond loopback, standing in for the network outside (tests
	// never send traffic off the machine); egressTCP and egressUDP are ports listening on all interfaces.
	egressIP             string
	egressTCP, egressUDP string
	// unixSockets are host UNIX sockets open to every user (hostUnixSockets); unixHits counts what they accepted.
	unixSockets []string
	unixHits    *atomic.Int64
}

type attack struct {
	name    string
	command string
	timeout int
	// check looks at the result and at the host; it reports failures with e.t.Errorf.
	check func(e *containmentEnv, out protocol.RunCommandOutput)
	// python marks an attack that needs python3 in the sandbox.
	python bool
}

func RunContainment(t *testing.T, target Target) {
	nonce := RandomHex(8)
	secret := "s3cr3t-" + RandomHex(12)
	t.Setenv(containmentSecretEnv, secret)

	b, ws := target.NewBackend(t)
	parent := filepath.Dir(ws)
	outsideFile := filepath.Join(parent, "outside-"+nonce+".txt")
	if err := os.WriteFile(outsideFile, []byte("outside-content-"+nonce), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(outsideFile) })
	sentinel := make([]byte, 64<<10)
	_, _ = rand.Read(sentinel)
	if err := os.WriteFile(filepath.Join(ws, "sentinel.bin"), sentinel, 0o644); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(sentinel)

	srv := StartServer(t, b, ws, execserver.Config{OutputCap: 64 << 10}, nil)
	var hits atomic.Int64
	listener := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "REACHED-"+nonce)
	}))
	t.Cleanup(listener.Close)
	e := &containmentEnv{
		t: t, cs: srv.Session, ws: ws, parent: parent, nonce: nonce, secret: secret, hits: &hits,
		serverPort: portPart(srv.Addr), hostPort: portPart(strings.TrimPrefix(listener.URL, "http://")),
	}
	e.egressIP, e.egressTCP, e.egressUDP = egressTargets(t, listener.Config.Handler)
	e.unixSockets, e.unixHits = hostUnixSockets(t, nonce)

	for _, a := range containmentAttacks(e, target, outsideFile) {
		t.Run(a.name, func(t *testing.T) {
			if reason, ok := target.KnownGaps[a.name]; ok {
				t.Skipf("known gap of this backend: %s", reason)
			}
			if a.python && target.NoPython {
				t.Skip("the attack is written in python3, which this backend's commands do not have")
			}
			e.t = t
			hits.Store(0)
			in := protocol.RunCommandInput{Command: a.command, TimeoutSeconds: a.timeout}
			out, res := CallRun(t, context.Background(), e.cs, in)
			if res.IsError {
				// A refusal is containment too, but every attack here is a valid command: say so.
				t.Logf("refused as a tool error: %v", res.Content)
			}
			a.check(e, out)
			if all := out.Stdout + out.Stderr; strings.Contains(all, secret) {
				t.Errorf("the server's secret leaked into the output")
			}
			// The server still answers, and the workspace is intact.
			if alive := MustRun(t, e.cs, protocol.RunCommandInput{Command: "echo alive"}); alive.Stdout != "alive\n" {
				t.Errorf("server after the attack: %+v", alive)
			}
			got, err := os.ReadFile(filepath.Join(ws, "sentinel.bin"))
			if err != nil || sha256.Sum256(got) != want {
				t.Errorf("workspace sentinel damaged: %v", err)
			}
		})
	}
}

func containmentAttacks(e *containmentEnv, target Target, outsideFile string) []attack {
	n := e.nonce
	home, _ := os.UserHomeDir()
	huge := target.HugeOutput
	huge = cmp.Or(huge, 2_000_000_000)
	mustNotExist := func(paths ...string) func(*containmentEnv, protocol.RunCommandOutput) {
		return func(e *containmentEnv, out protocol.RunCommandOutput) {
			for _, p := range paths {
				if _, err := os.Lstat(p); err == nil {
					e.t.Errorf("the command created %s outside the workspace (output %q %q)", p, out.Stdout, out.Stderr)
					os.RemoveAll(p)
				}
			}
		}
	}
	mustNotSay := func(words ...string) func(*containmentEnv, protocol.RunCommandOutput) {
		return func(e *containmentEnv, out protocol.RunCommandOutput) {
			for _, w := range words {
				if strings.Contains(out.Stdout+out.Stderr, w) {
					e.t.Errorf("output shows %q: stdout %q stderr %q", w, Clip(out.Stdout), Clip(out.Stderr))
				}
			}
		}
	}
	noneLeft := func(e *containmentEnv, out protocol.RunCommandOutput) {
		if left := ProcessesWith(n); len(left) > 0 {
			e.t.Errorf("processes outlived the call: %v", left)
		}
	}
	noNetwork := func(e *containmentEnv, out protocol.RunCommandOutput) {
		mustNotSay("REACHED")(e, out)
		if h := e.hits.Load(); h > 0 {
			e.t.Errorf("the host listener got %d requests", h)
		}
	}
	tcpTry := func(port string) string {
		return fmt.Sprintf(`curl -s -m 3 http://127.0.0.1:%[1]s/ >/dev/null && echo REACHED-curl;
python3 -c "import socket; s=socket.create_connection(('127.0.0.1', %[1]s), 3); print('REACHED-python')" 2>&1;
bash -c 'exec 3<>/dev/tcp/127.0.0.1/%[1]s && echo REACHED-bash' 2>&1; true`, port)
	}

	unixTry := func() string {
		var b strings.Builder
		// Where the image has no python3 (a minimal Docker image) the shell says whether each socket can be named.
		for _, p := range e.unixSockets {
			fmt.Fprintf(&b, "test -e %q && echo NAMED %q\n", p, p)
		}
		b.WriteString("command -v python3 >/dev/null || exit 0\necho PYTHON\npython3 - <<'EOF' 2>&1\nimport socket\n")
		for _, p := range e.unixSockets {
			fmt.Fprintf(&b, "try:\n    s = socket.socket(socket.AF_UNIX); s.settimeout(3); s.connect(%q); print(s.recv(99).decode())\nexcept Exception as x:\n    print('refused', %q, x)\n", p, p)
		}
		b.WriteString("EOF\ntrue")
		return b.String()
	}

	attacks := []attack{
		// Landlock does not govern connect() on a pathname socket: only a root where the host's sockets cannot
		// be named (or, in the fallback, no UNIX socket at all) keeps a command off them.
		{name: "connect_host_unix_sockets", command: unixTry(), timeout: 30,
			check: func(e *containmentEnv, out protocol.RunCommandOutput) {
				mustNotSay("REACHED-UNIX")(e, out)
				if h := e.unixHits.Load(); h > 0 {
					e.t.Errorf("the host's UNIX sockets accepted %d connections from the command (output %q)", h, Clip(out.Stdout))
				}
				if len(e.unixSockets) == 0 {
					e.t.Log("no host socket could be made by this user: nothing was tried")
				} else if !strings.Contains(out.Stdout, "PYTHON") {
					if strings.Contains(out.Stdout, "NAMED") {
						e.t.Errorf("a host socket can be named and no python3 is there to try it: %q", Clip(out.Stdout))
					}
				} else if n := strings.Count(out.Stdout, "refused "); n != len(e.unixSockets) {
					e.t.Errorf("the command did not try every socket (%d of %d refusals): %q %q", n, len(e.unixSockets), Clip(out.Stdout), Clip(out.Stderr))
				}
			}},
		{name: "write_tmp_outside_private_tmp", command: fmt.Sprintf("echo x > /tmp/escape-%s; echo x > /var/tmp/escape-%s; true", n, n),
			check: mustNotExist("/tmp/escape-"+n, "/var/tmp/escape-"+n)},
		{name: "write_home", command: fmt.Sprintf("echo x > %s/escape-%s; true", home, n),
			check: mustNotExist(filepath.Join(home, "escape-"+n))},
		{name: "write_workspace_parent", command: fmt.Sprintf("echo x > ../escape-%s; echo x > %s/escape-abs-%s; mkdir ../escape-dir-%s; true", n, e.parent, n, n),
			check: mustNotExist(filepath.Join(e.parent, "escape-"+n), filepath.Join(e.parent, "escape-abs-"+n), filepath.Join(e.parent, "escape-dir-"+n))},
		{name: "write_through_symlink", command: fmt.Sprintf("ln -s %s lnk-%s; echo x > lnk-%s/escape-sym-%s; ln -s .. up-%s; echo x > up-%s/escape-up-%s; true", e.parent, n, n, n, n, n, n),
			check: mustNotExist(filepath.Join(e.parent, "escape-sym-"+n), filepath.Join(e.parent, "escape-up-"+n))},
		{name: "read_outside_file", command: fmt.Sprintf("cat %s ../outside-%s.txt 2>&1; true", outsideFile, n),
			check: mustNotSay("outside-content-" + n)},
		{name: "overwrite_outside_file", command: fmt.Sprintf("echo pwned > %s; true", outsideFile),
			check: func(e *containmentEnv, out protocol.RunCommandOutput) {
				if b, _ := os.ReadFile(outsideFile); string(b) != "outside-content-"+n {
					e.t.Errorf("file next to the workspace overwritten: %q", b)
				}
			}},
		{name: "read_host_secrets", command: "cat /etc/shadow /root/.bash_history /etc/ssh/ssh_host_ed25519_key 2>&1 | head -c 2000; ls /root 2>&1; true",
			check: mustNotSay("root:", "PRIVATE KEY")},
		{name: "server_environment", command: fmt.Sprintf(`env; cat /proc/self/environ /proc/1/environ /proc/$PPID/environ /proc/%d/environ 2>&1;
for f in /proc/[0-9]*/environ; do cat "$f" 2>/dev/null; done | tr '\0' '\n' | grep -a %s; true`, os.Getpid(), containmentSecretEnv),
			check: mustNotSay(e.secret)},
		{name: "server_threads_environment", command: fmt.Sprintf(`cat /proc/%[1]d/task/*/environ 2>&1 | tr '\0' '\n' | grep -a %[2]s;
for t in $(ls /proc/%[1]d/task 2>/dev/null); do cat /proc/%[1]d/task/$t/environ 2>/dev/null; done | tr '\0' '\n' | grep -a %[2]s; true`, os.Getpid(), containmentSecretEnv),
			check: mustNotSay(e.secret)},
		{name: "signal_server", command: fmt.Sprintf("kill -STOP %[1]d 2>&1; kill -9 %[1]d 2>&1; for t in $(ls /proc/%[1]d/task 2>/dev/null); do kill -9 $t; done 2>&1; true", os.Getpid()),
			check: func(e *containmentEnv, out protocol.RunCommandOutput) {}},
		{name: "server_memory", command: fmt.Sprintf(`grep -a -c %[1]s /proc/%[2]d/mem 2>&1; python3 -c "
f=open('/proc/%[2]d/maps'); print(f.read()[:100])" 2>&1; true`, e.secret, os.Getpid()),
			check: mustNotSay(e.secret, "r-xp")},
		{name: "network_host_listener", command: tcpTry(e.hostPort), timeout: 30, check: noNetwork},
		{name: "network_executor_own_port", command: tcpTry(e.serverPort), timeout: 30, check: noNetwork},
		{name: "network_mptcp", timeout: 30, check: noNetwork, command: fmt.Sprintf(`python3 -c "
import socket; s=socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); s.settimeout(3); s.connect(('127.0.0.1', %s)); print('REACHED-mptcp')" 2>&1; true`, e.hostPort)},
		{name: "network_egress", timeout: 30, check: noNetwork, command: fmt.Sprintf(`curl -s -m 5 http://%[1]s:%[2]s/ && echo REACHED-tcp; python3 -c "
import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'REACHED-udp', ('%[1]s', %[3]s)); print('REACHED-udp')" 2>&1; true`, e.egressIP, e.egressTCP, e.egressUDP)},
		{name: "docker_socket", command: `curl -s -m 3 --unix-socket /var/run/docker.sock http://x/version 2>&1 | head -c 300;
curl -s -m 3 --unix-socket /run/docker.sock http://x/version 2>&1 | head -c 300; true`,
			check: mustNotSay("ApiVersion")},
		{name: "orphans", command: fmt.Sprintf("sleep 3%[1]s.1 & nohup sleep 3%[1]s.2 >/dev/null 2>&1 & setsid sleep 3%[1]s.3 & ( sleep 3%[1]s.4 & ) & sh -c 'sleep 3%[1]s.5 &' ; echo started", numericNonce(n)),
			check: func(e *containmentEnv, out protocol.RunCommandOutput) {
				if !strings.Contains(out.Stdout, "started") {
					e.t.Errorf("the command did not run: %+v", out)
				}
				if left := ProcessesWith("3" + numericNonce(n) + "."); len(left) > 0 {
					e.t.Errorf("background processes outlived the call: %v", left)
				}
			}},
		{name: "kill_own_init", command: fmt.Sprintf("setsid sleep 3%[1]s.7 & sleep 0.2; kill -9 $PPID 2>&1; kill -9 1 2>&1; sleep 0.3; echo survived", numericNonce(n)),
			check: func(e *containmentEnv, out protocol.RunCommandOutput) {
				if left := ProcessesWith("3" + numericNonce(n) + ".7"); len(left) > 0 {
					e.t.Errorf("a process outlived the call after killing its init: %v", left)
				}
			}},
		{name: "endless_loop", command: fmt.Sprintf(": %s; while :; do :; done", n), timeout: 2,
			check: func(e *containmentEnv, out protocol.RunCommandOutput) {
				if out.ExitCode != -1 || !out.TimedOut || out.DurationMs > 6000 {
					e.t.Errorf("endless loop: %+v", out)
				}
				noneLeft(e, out)
			}},
		{name: "huge_output", command: fmt.Sprintf("yes goalbox-output | head -c %d; head -c %d /dev/zero >&2", huge, huge*3/20), timeout: int(max(120, huge/10_000_000)),
			check: func(e *containmentEnv, out protocol.RunCommandOutput) {
				if out.ExitCode != 0 || !out.StdoutTruncated || !out.StderrTruncated || len(out.Stdout) > 70<<10 {
					e.t.Errorf("huge output: exit %d truncated %v/%v, %d bytes kept", out.ExitCode, out.StdoutTruncated, out.StderrTruncated, len(out.Stdout))
				}
				m := regexp.MustCompile(`\[\.\.\. (\d+) bytes left out \.\.\.\]`).FindStringSubmatch(out.Stdout)
				if m == nil {
					e.t.Fatalf("no marker")
				}
				left, _ := strconv.Atoi(m[1])
				if kept := len(out.Stdout) - len(m[0]) - 2; int64(left+kept) != huge {
					e.t.Errorf("%d left out + %d kept != %d", left, kept, huge)
				}
			}},
	}
	if target.MemoryBomb > 0 {
		attacks = append(attacks, attack{name: "memory_bomb", timeout: 60,
			command: fmt.Sprintf(`python3 -c "b = bytearray(%d); b[-1] = 1; print('ALLOCATED')" 2>&1 | tail -1`, target.MemoryBomb),
			check:   mustNotSay("ALLOCATED")})
	}
	if target.ForkBomb {
		// The bomb runs into the process limit and is killed at the timeout; the server answers meanwhile.
		attacks = append(attacks, attack{name: "fork_bomb", timeout: 4,
			command: fmt.Sprintf(": %s; b() { b | b & }; b; sleep 10", n),
			check: func(e *containmentEnv, out protocol.RunCommandOutput) {
				// Bounded either way: killed at the timeout while it runs into the limit, or ended early when its
				// shell could not fork at all (RLIMIT_NPROC counts the run-as user's processes in the fallback).
				if !(out.ExitCode == -1 && out.TimedOut) && !strings.Contains(out.Stderr, "fork") {
					e.t.Errorf("fork bomb: %+v", out)
				}
				noneLeft(e, out)
			}})
	}
	return append(attacks, isolationAttacks(e, target)...)
}

func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// numericNonce turns a hex nonce into digits, for sleep arguments.
func numericNonce(hex string) string {
	var b bytes.Buffer
	for _, c := range hex {
		b.WriteString(strconv.Itoa(int(c) % 10))
	}
	return b.String()
}

func portPart(addr string) string {
	i := strings.LastIndexByte(addr, ':')
	return addr[i+1:]
}

func Clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// egressTargets finds an address of this machine beyond loopback and listens on all interfaces: TCP serving h (so a
// connection counts as a hit) and UDP (a datagram that gets out shows as the command's REACHED-udp, printed only when
// sendto succeeded). Without such an address, loopback stands in.
func egressTargets(t *testing.T, h http.Handler) (ip, tcpPort, udpPort string) {
	ip = "127.0.0.1"
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
				ip = n.IP.String()
				break
			}
		}
	}
	tl, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(tl)
	t.Cleanup(func() { srv.Close() })
	ul, err := net.ListenPacket("udp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	return ip, portPart(tl.Addr().String()), portPart(ul.LocalAddr().String())
}

// ProcessesWith lists the host processes whose command line contains marker.
func ProcessesWith(marker string) []string {
	ents, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), marker) {
			continue
		}
		if pid, _ := strconv.Atoi(e.Name()); pid == os.Getpid() || !PidAlive(pid) {
			continue
		}
		found = append(found, e.Name()+":"+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return found
}
