//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress/egresstest"
)

// fetchPy is the sandbox's HTTP client for these tests: Python's urllib, which takes HTTP_PROXY and HTTPS_PROXY from
// the environment as pip does. It prints the status and the body, and exits 0 whatever the status.
const fetchPy = `import ssl, sys, urllib.request, urllib.error
args, ca, headers, direct = sys.argv[1:], None, {}, False
while args[0].startswith("-"):
    flag = args.pop(0)
    if flag == "-ca":
        ca = args.pop(0)
    elif flag == "-H":
        name, value = args.pop(0).split(": ", 1)
        headers[name] = value
    elif flag == "-direct":
        direct = True
handlers = [urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca))]
if direct:
    handlers.append(urllib.request.ProxyHandler({}))
opener = urllib.request.build_opener(*handlers)
try:
    resp = opener.open(urllib.request.Request(args[0], headers=headers), timeout=15)
    status, body = resp.status, resp.read()
except urllib.error.HTTPError as e:
    status, body = e.code, e.read()
except Exception as e:
    print("error", e)
    sys.exit(1)
print(status, body.decode(), end="")
`

const composeUpstreamBody = "hello from the compose upstream\n"

// TestComposeEgress: deploy/compose.yaml's executor runs commands in its namespace mode, so -net-allow and -secret
// work in the stack as on the host: an upstream of the test's own (a network namespace whose veth's near end is
// moved into the executor's container, names in the container's /etc/hosts through extra_hosts) is fetched over
// HTTP and HTTPS and by go mod download; a host not listed is refused with the 403 and in network_denied; a
// connection around the proxy goes nowhere; a credential given with examples/compose/secrets.yaml is added for its
// host only and is found nowhere in the sandbox or the logs. Each refusal's positive control is the same fetch made
// by the executor's container itself, outside the sandbox.
func TestComposeEgress(t *testing.T) {
	requireCompose(t)
	egresstest.NeedNetRoot(t)
	const real = "compose-real-credential-8c1f"
	up := egresstest.NewUpstream(t, "allowed.test", "other.test", "secret.test")
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Host, "secret.test") {
			if r.Header.Get("Authorization") != "Bearer "+real {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			io.WriteString(w, "authorized\n")
			return
		}
		io.WriteString(w, composeUpstreamBody)
	})
	up.Serve(t, 80, false, hello)
	up.Serve(t, 443, true, hello)
	up.Serve(t, 8081, false, egresstest.GoProxy(t))

	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "upstream-ca.pem")
	secret := filepath.Join(dir, "credential")
	if err := os.WriteFile(ca, up.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	// As examples/compose/secrets.yaml tells users: readable by the executor's uid 10001 and nobody else.
	if err := os.WriteFile(secret, []byte(real), 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(secret, 10001, 10001); err != nil {
		t.Fatal(err)
	}
	override := filepath.Join(dir, "upstreams.yaml")
	if err := os.WriteFile(override, []byte(fmt.Sprintf(`services:
  executor:
    extra_hosts: ["allowed.test:%[1]s", "other.test:%[1]s", "secret.test:%[1]s", "self.test:%[3]s", "loop.test:127.0.0.1", "meta.test:169.254.169.254"]
    environment:
      GOALBOX_EXEC_UPSTREAM_CA: /run/secrets/upstream_ca
    secrets: [upstream_ca]
secrets:
  upstream_ca:
    file: %[2]s
`, up.IP, ca, up.HostIP)), 0o644); err != nil {
		t.Fatal(err)
	}
	example, err := filepath.Abs(filepath.Join("..", "examples", "compose", "secrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := startCompose(t, []string{example, override},
		"GOALBOX_NET_ALLOW=allowed.test,allowed.test:8081,secret.test,self.test:7102,loop.test:7102,meta.test,"+up.Subnet,
		"GOALBOX_SECRET_NAME=TOKEN", "GOALBOX_SECRET_HOST=secret.test", "GOALBOX_SECRET_FILE="+secret)
	executor := s.containerByName["executor"]
	pidOut, err := exec.Command("docker", "inspect", "-f", "{{.State.Pid}}", executor).Output()
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(pidOut), &pid)
	up.MoveNearEnd(t, pid)

	health, err := http.Get(strings.TrimSuffix(s.execURL, protocol.EndpointPath) + protocol.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	healthJSON, _ := io.ReadAll(health.Body)
	health.Body.Close()
	var h protocol.ExecutorHealth
	if err := json.Unmarshal(healthJSON, &h); err != nil {
		t.Fatalf("health: %v: %s", err, healthJSON)
	}
	if h.Confinement.LocalConfinement == nil || h.Confinement.Mode != protocol.IsolationPIDNamespace {
		t.Fatalf("the compose executor is not in its namespace mode: %s", healthJSON)
	}
	if eg := h.Confinement.Egress; eg == nil || !slices.Contains(eg.Allow, "allowed.test") || !slices.Contains(eg.Secrets, "TOKEN@secret.test") {
		t.Errorf("health shows no egress allow-list or secret: %s", healthJSON)
	}

	fs := connectMCP(t, s.fsURL, s.token)
	ex := connectMCP(t, s.execURL, s.token)
	var w protocol.WriteFileOutput
	callTool(t, fs, protocol.ToolWriteFile, protocol.WriteFileInput{Path: "fetch.py", Content: fetchPy}, &w)
	callTool(t, fs, protocol.ToolWriteFile, protocol.WriteFileInput{Path: "ca.pem", Content: string(up.CAPEM)}, &w)
	run := func(command string) protocol.RunCommandOutput { return runCommand(t, ex, "", command) }
	// outside runs fetch.py in the executor's container, outside any command's sandbox: the positive control that
	// the upstream is reachable from where the proxy is.
	outside := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("docker", append([]string{"exec", executor, "python3", "/workspace/fetch.py"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("positive control: fetch.py %v in the executor's container: %v: %s", args, err, out)
		}
		return string(out)
	}

	t.Run("an allowed host over HTTP and HTTPS", func(t *testing.T) {
		out := run("python3 fetch.py http://allowed.test/ && python3 fetch.py -ca ca.pem https://allowed.test/")
		if out.ExitCode != 0 || out.Stdout != "200 "+composeUpstreamBody+"200 "+composeUpstreamBody {
			t.Fatalf("exit %d, stdout %q, stderr %q", out.ExitCode, out.Stdout, out.Stderr)
		}
		if len(out.Network) != 2 || out.Network[0].Host != "allowed.test:80" || out.Network[1].Host != "allowed.test:443" {
			t.Errorf("network: %+v", out.Network)
		}
	})

	t.Run("go mod download from an allowed static GOPROXY", func(t *testing.T) {
		out := run("cd $TMPDIR && GOPROXY=http://allowed.test:8081 GOSUMDB=off GOFLAGS=-modcacherw go mod download -json " + egresstest.GoModule + "@v1.0.0")
		if out.ExitCode != 0 || !strings.Contains(out.Stdout, `"Version": "v1.0.0"`) {
			t.Fatalf("exit %d, stdout %q, stderr %q", out.ExitCode, out.Stdout, out.Stderr)
		}
	})

	t.Run("a host not listed is refused with the 403 and in network_denied", func(t *testing.T) {
		if got := outside("-direct", "http://other.test/"); got != "200 "+composeUpstreamBody {
			t.Fatalf("positive control: %q", got)
		}
		out := run("python3 fetch.py http://other.test/")
		if !strings.HasPrefix(out.Stdout, "403 ") || !strings.Contains(out.Stdout, "refused other.test:80 (rule: allow-list)") ||
			!strings.Contains(out.Stdout, "-net-allow") || !slices.Equal(out.NetworkDenied, []string{"other.test:80"}) {
			t.Errorf("stdout %q, network_denied %v", out.Stdout, out.NetworkDenied)
		}
	})

	t.Run("allowed names leading to the container itself, loopback or metadata, and a port not allowed, are refused", func(t *testing.T) {
		// Controls: the executor's own port answers on loopback and on the address the test gave the container.
		for _, url := range []string{"http://127.0.0.1:7102/healthz", "http://" + up.HostIP + ":7102/healthz"} {
			if got := outside("-direct", "-H", "Host: localhost", url); !strings.HasPrefix(got, "200 ") {
				t.Fatalf("positive control: %s from the executor's container: %q", url, got)
			}
		}
		out := run("python3 fetch.py http://self.test:7102/healthz; echo; python3 fetch.py http://loop.test:7102/healthz; echo; " +
			"python3 fetch.py http://meta.test/latest/meta-data/; echo; python3 fetch.py http://allowed.test:8080/")
		for _, want := range []string{"an address of the executor's own host", "loopback", "169.254.169.254, a cloud metadata address", "refused allowed.test:8080 (rule: allow-list)"} {
			if !strings.Contains(out.Stdout, want) {
				t.Errorf("no refusal saying %q: %q", want, out.Stdout)
			}
		}
		if strings.Contains(out.Stdout, `"status"`) {
			t.Errorf("a refused name reached the executor's own port: %q", out.Stdout)
		}
		if want := []string{"self.test:7102", "loop.test:7102", "meta.test:80", "allowed.test:8080"}; !slices.Equal(out.NetworkDenied, want) {
			t.Errorf("network_denied %v, want %v", out.NetworkDenied, want)
		}
	})

	t.Run("a connection around the proxy goes nowhere", func(t *testing.T) {
		url := "http://" + up.IP + "/"
		if got := outside("-direct", url); got != "200 "+composeUpstreamBody {
			t.Fatalf("positive control: %q", got)
		}
		out := run("python3 fetch.py -direct " + url)
		if out.ExitCode == 0 || strings.Contains(out.Stdout, composeUpstreamBody) {
			t.Errorf("reached the upstream around the proxy: exit %d, %q", out.ExitCode, out.Stdout)
		}
	})

	t.Run("a credential is added for its host only and is nowhere in the sandbox", func(t *testing.T) {
		out := run(`echo "$TOKEN"`)
		placeholder := strings.TrimSpace(out.Stdout)
		if !strings.HasPrefix(placeholder, "goalbox_secret_") {
			t.Fatalf("TOKEN in a command is %q, want a placeholder", placeholder)
		}
		if got := outside("-ca", "/workspace/ca.pem", "-H", "Authorization: Bearer "+placeholder, "https://secret.test/"); !strings.HasPrefix(got, "401 ") {
			t.Fatalf("positive control: the upstream took the placeholder: %q", got)
		}
		// The pattern matches the value but is not it, or grep would find it in its own /proc/self/cmdline.
		pattern := real[:len(real)-1] + "[" + real[len(real)-1:] + "]"
		out = run(`python3 fetch.py -H "Authorization: Bearer $TOKEN" https://secret.test/; python3 fetch.py -H "Authorization: Bearer $TOKEN" http://secret.test/; ` +
			`echo; env | grep -c '` + pattern + `'; grep -rl '` + pattern + `' /proc/self/environ /proc/self/cmdline . $HOME $TMPDIR /etc /run 2>/dev/null | wc -l; ` +
			// The search's positive control: it finds the placeholder where it is.
			`grep -l goalbox_secret_ /proc/self/environ`)
		lines := strings.Split(out.Stdout, "\n")
		if len(lines) < 4 || lines[0] != "200 authorized" || !strings.Contains(lines[1], "secret TOKEN") {
			t.Errorf("the credential at its host, refused over plain HTTP: %q %q", out.Stdout, out.Stderr)
		}
		if !strings.HasSuffix(out.Stdout, "\n0\n0\n/proc/self/environ\n") || strings.Contains(out.Stdout+out.Stderr, real) {
			t.Errorf("the real value is in the sandbox: %q", out.Stdout)
		}
		if !slices.Equal(out.NetworkDenied, []string{"secret.test:80"}) {
			t.Errorf("network_denied %v", out.NetworkDenied)
		}
		logs, _ := s.compose("logs", "--no-color")
		if strings.Contains(logs, real) || strings.Contains(string(healthJSON), real) {
			t.Errorf("the real value is in the compose logs or /healthz")
		}
	})
}
