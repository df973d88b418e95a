//go:build linux

package local

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress/egresstest"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// egressFixture is an upstream with its servers, a hosts file naming them, and an executor over the local backend
// whose -net-allow names some of them.
type egressFixture struct {
	up        *egresstest.Upstream
	hosts     string
	srv       *sandboxtest.Server
	ws        string
	loopPort  int // a server on the host's 127.0.0.1
	selfPort  int // a server on the host's own veth address
	allowList string
}

const upstreamBody = "hello from the upstream\n"

// egressSpec is what a copy of the test binary running as an ordinary user needs of the upstreams its root
// parent made and serves (TestEgressAsOrdinaryUser), as JSON in egressSpecEnv.
type egressSpec struct {
	Subnet, HostIP, IP string
	CAPEM              []byte
	Hosts              string
	LoopPort, SelfPort int
}

// egressSpecEnv names the spec in the ordinary user's run.
const egressSpecEnv = "GOALBOX_TEST_EGRESS_SPEC"

// newEgressUpstreams starts the upstreams and the host's own servers, and writes the hosts file.
func newEgressUpstreams(t *testing.T, dir string) egressSpec {
	t.Helper()
	up := egresstest.NewUpstream(t, "allowed.test", "other.test")
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, upstreamBody) })
	up.Serve(t, 80, false, hello)
	up.Serve(t, 443, true, hello)
	up.Serve(t, 8080, false, hello)
	up.Serve(t, 8081, false, egresstest.GoProxy(t))
	up.Serve(t, 8082, false, egresstest.PyPIIndex(t))
	spec := egressSpec{Subnet: up.Subnet, HostIP: up.HostIP, IP: up.IP, CAPEM: up.CAPEM, Hosts: filepath.Join(dir, "hosts")}
	// Servers on addresses of the host itself, reachable from the host: the proxy must refuse names leading there.
	for _, c := range []struct {
		ip   string
		port *int
	}{{"127.0.0.1", &spec.LoopPort}, {up.HostIP, &spec.SelfPort}} {
		ln, err := net.Listen("tcp", c.ip+":0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: hello}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		*c.port = ln.Addr().(*net.TCPAddr).Port
	}
	hosts := fmt.Sprintf("%s allowed.test other.test gomod.test pypi.test\n127.0.0.1 loop.test\n169.254.169.254 meta.test\nfd00:ec2::254 meta6.test\n%s self.test\n", up.IP, up.HostIP)
	if err := os.WriteFile(spec.Hosts, []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
	return spec
}

func newEgressFixture(t *testing.T) *egressFixture {
	t.Helper()
	var spec egressSpec
	if js := os.Getenv(egressSpecEnv); js != "" {
		if err := json.Unmarshal([]byte(js), &spec); err != nil {
			t.Fatal(err)
		}
	} else {
		spec = newEgressUpstreams(t, t.TempDir())
	}
	up := &egresstest.Upstream{Subnet: spec.Subnet, HostIP: spec.HostIP, IP: spec.IP, CAPEM: spec.CAPEM, CertPool: x509.NewCertPool()}
	up.CertPool.AppendCertsFromPEM(spec.CAPEM)
	f := &egressFixture{up: up, hosts: spec.Hosts, loopPort: spec.LoopPort, selfPort: spec.SelfPort}
	f.allowList = fmt.Sprintf("allowed.test,gomod.test:8081,pypi.test:8082,loop.test:%d,meta.test,meta6.test,self.test:%d,%s", f.loopPort, f.selfPort, up.Subnet)
	allow, err := egress.ParseAllowList(f.allowList)
	if err != nil {
		t.Fatal(err)
	}
	b, ws := newLocalTestBackend(t, func(c *Config) {
		c.Network = egress.Config{Allow: allow, Resolver: egress.HostsFile(f.hosts)}
	})
	f.ws = ws
	if err := os.WriteFile(filepath.Join(ws, "ca.pem"), up.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	f.srv = sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil)
	return f
}

// TestEgressAsOrdinaryUser runs TestEgressAllowList in a copy of the test binary running as an ordinary user (the
// namespace mode through a user namespace: the holder's listener is the only way out there too), against
// upstreams this root test makes and serves.
func TestEgressAsOrdinaryUser(t *testing.T) {
	if os.Getenv(egressSpecEnv) != "" || os.Getenv(asUserEnv) != "" {
		t.Skip("already the ordinary user")
	}
	egresstest.NeedNetRoot(t)
	if testing.Short() {
		t.Skip("-short")
	}
	const uid = 64011
	dir, err := os.MkdirTemp("", "goalbox-egress-as-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	spec := newEgressUpstreams(t, dir)
	bin := filepath.Join(dir, "execserver.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, home := filepath.Join(dir, "tmp"), filepath.Join(dir, "home")
	for _, d := range []string{tmp, home} {
		if err := os.Mkdir(d, 0o700); err != nil || os.Chown(d, uid, uid) != nil {
			t.Fatal("cannot make the user's folders")
		}
	}
	js, _ := json.Marshal(spec)
	cmd := exec.CommandContext(t.Context(), bin, "-test.run", "^TestEgressAllowList$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, egressSpecEnv + "=" + string(js), asUserEnv + "=namespaces", "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	summary := regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): .*$`).FindAllString(string(out), -1)
	t.Logf("as uid %d:\n%s", uid, strings.Join(summary, "\n"))
	if err != nil || !strings.Contains(string(out), "--- PASS: TestEgressAllowList ") {
		t.Fatalf("TestEgressAllowList as an ordinary user: %v\n%s", err, out)
	}
}

func (f *egressFixture) run(t *testing.T, command string) protocol.RunCommandOutput {
	t.Helper()
	return sandboxtest.MustCall[protocol.RunCommandOutput](t, f.srv.Session, protocol.ToolRunCommand, protocol.RunCommandInput{Command: command, TimeoutSeconds: 60})
}

// hostGet is the positive control: the same URL fetched from the host, outside the sandbox, at ip.
func (f *egressFixture) hostGet(t *testing.T, ip, url string) {
	t.Helper()
	resp, err := f.up.HostClient(ip).Get(url)
	if err != nil {
		t.Fatalf("positive control: %s from the host (at %s): %v", url, ip, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != upstreamBody {
		t.Fatalf("positive control: %s from the host: %d %q", url, resp.StatusCode, b)
	}
}

func hostsOf(out protocol.RunCommandOutput) []string {
	var h []string
	for _, n := range out.Network {
		h = append(h, n.Host)
	}
	return h
}

// TestEgressAllowList runs curl and a package manager in the sandbox against upstreams on the test's own network
// namespace: what -net-allow names is reachable over HTTP and HTTPS; everything else is refused with a 403 that
// says why and shows in network_denied, and each refusal has its positive control from the host.
func TestEgressAllowList(t *testing.T) {
	f := newEgressFixture(t)
	up := f.up

	t.Run("health-and-description", func(t *testing.T) {
		h := f.srv.Exec.Health()
		if h.Confinement.Egress == nil || strings.Join(h.Confinement.Egress.Allow, ",") != f.allowList {
			t.Fatalf("/healthz egress: %+v", h.Confinement.Egress)
		}
		if h.Confinement.Network != protocol.NetworkEgressProxy {
			t.Errorf("/healthz network: %s", h.Confinement.Network)
		}
		tools, err := f.srv.Session.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools.Tools {
			if tool.Name == protocol.ToolRunCommand && !strings.Contains(tool.Description, "allowed.test, gomod.test:8081") {
				t.Errorf("the tool description does not name the allowed hosts: %s", tool.Description)
			}
		}
	})

	t.Run("http-and-https-allowed", func(t *testing.T) {
		out := f.run(t, "curl -sS --fail-with-body http://allowed.test/ && curl -sS --fail-with-body --cacert ca.pem https://allowed.test/")
		if out.ExitCode != 0 || out.Stdout != upstreamBody+upstreamBody {
			t.Fatalf("curl over HTTP and HTTPS: exit %d, stdout %q, stderr %q", out.ExitCode, out.Stdout, out.Stderr)
		}
		if hs := hostsOf(out); !slices.Equal(hs, []string{"allowed.test:80", "allowed.test:443"}) || out.Network[1].BytesReceived == 0 {
			t.Errorf("network: %+v", out.Network)
		}
		if len(out.NetworkDenied) != 0 {
			t.Errorf("network_denied: %v", out.NetworkDenied)
		}
	})

	t.Run("pip-download", func(t *testing.T) {
		if out := f.run(t, "python3 -m pip --version"); out.ExitCode != 0 {
			t.Skipf("no pip in the sandbox: %s", out.Stderr)
		}
		// Positive control: the host downloads the wheel from the same index.
		dl := t.TempDir()
		cmd := exec.Command("python3", "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check", "--no-cache-dir",
			"--index-url", "http://"+up.IP+":8082/simple/", "--trusted-host", up.IP, "-d", dl, "goalbox-hello==1.0")
		cmd.Env = append(os.Environ(), "HTTP_PROXY=", "http_proxy=", "PIP_CONFIG_FILE=/dev/null")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("positive control: pip download on the host: %v\n%s", err, b)
		}
		out := f.run(t, "cd $TMPDIR && rm -rf dl && PIP_CONFIG_FILE=/dev/null python3 -m pip download -q --no-deps --disable-pip-version-check --no-cache-dir "+
			"--index-url http://pypi.test:8082/simple/ --trusted-host pypi.test -d dl goalbox-hello==1.0 && ls dl")
		if out.ExitCode != 0 || out.Stdout != "goalbox_hello-1.0-py3-none-any.whl\n" {
			t.Fatalf("pip download in the sandbox: exit %d\n%s\n%s", out.ExitCode, out.Stdout, out.Stderr)
		}
		if !slices.Contains(hostsOf(out), "pypi.test:8082") {
			t.Errorf("network: %+v", out.Network)
		}
	})

	t.Run("go-mod-download", func(t *testing.T) {
		// Positive control: the host fetches the module from the same static GOPROXY.
		cache := t.TempDir()
		cmd := exec.Command("go", "mod", "download", "-json", egresstest.GoModule+"@v1.0.0")
		cmd.Dir = cache
		cmd.Env = append(os.Environ(), "GOPROXY=http://"+up.IP+":8081", "GOSUMDB=off", "GOMODCACHE="+filepath.Join(cache, "mod"),
			"GOFLAGS=-modcacherw", "GOTOOLCHAIN=local", "HTTP_PROXY=", "http_proxy=")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("positive control: go mod download on the host: %v\n%s", err, b)
		}
		out := f.run(t, "cd $TMPDIR && GOPROXY=http://gomod.test:8081 GOSUMDB=off GOFLAGS=-modcacherw go mod download -json "+egresstest.GoModule+"@v1.0.0")
		if out.ExitCode != 0 || !strings.Contains(out.Stdout, `"Version": "v1.0.0"`) || strings.Contains(out.Stdout, `"Error"`) {
			t.Fatalf("go mod download in the sandbox: exit %d\n%s\n%s", out.ExitCode, out.Stdout, out.Stderr)
		}
		if !slices.Contains(hostsOf(out), "gomod.test:8081") {
			t.Errorf("network: %+v", out.Network)
		}
	})

	t.Run("host-not-listed", func(t *testing.T) {
		f.hostGet(t, up.IP, "http://other.test/")
		out := f.run(t, "curl -sS http://other.test/; echo; curl -sS --cacert ca.pem https://other.test/")
		if !strings.Contains(out.Stdout, "refused other.test:80 (rule: allow-list)") || !strings.Contains(out.Stdout, "-net-allow") {
			t.Errorf("curl shows no 403 body naming the host, port, rule and -net-allow: %q", out.Stdout)
		}
		if strings.Contains(out.Stdout, upstreamBody) {
			t.Errorf("the refused host answered: %q", out.Stdout)
		}
		if !slices.Equal(out.NetworkDenied, []string{"other.test:80", "other.test:443"}) {
			t.Errorf("network_denied %v, want other.test:80 and :443", out.NetworkDenied)
		}
	})

	t.Run("bypassing-the-proxy", func(t *testing.T) {
		f.hostGet(t, up.IP, "http://"+up.IP+"/")
		out := f.run(t, "curl -sS --noproxy '*' --max-time 10 http://"+up.IP+"/; echo exit=$?; "+
			"curl -sS --noproxy '*' --max-time 10 --resolve allowed.test:80:"+up.IP+" http://allowed.test/; echo exit=$?")
		if strings.Contains(out.Stdout, upstreamBody) || strings.Count(out.Stdout, "exit=0") != 0 {
			t.Errorf("a connection around the proxy reached the upstream: %q %q", out.Stdout, out.Stderr)
		}
		if !strings.Contains(out.Stderr, "unreachable") && !strings.Contains(out.Stderr, "Failed to connect") {
			t.Errorf("curl around the proxy: %q", out.Stderr)
		}
	})

	t.Run("port-not-allowed", func(t *testing.T) {
		f.hostGet(t, up.IP, "http://allowed.test:8080/")
		out := f.run(t, "curl -sS http://allowed.test:8080/")
		if !strings.Contains(out.Stdout, "port 8080 is not allowed for allowed.test") || strings.Contains(out.Stdout, upstreamBody) {
			t.Errorf("port 8080: %q", out.Stdout)
		}
		if !slices.Equal(out.NetworkDenied, []string{"allowed.test:8080"}) {
			t.Errorf("network_denied %v", out.NetworkDenied)
		}
	})

	t.Run("ip-literals", func(t *testing.T) {
		// The upstream's address is inside the CIDR entry: allowed as a literal, any port.
		// NO_PROXY keeps 127.0.0.1 direct (the sandbox's own loopback, where nothing listens on that port):
		// without it the request goes to the proxy, which must refuse the host's loopback.
		out := f.run(t, fmt.Sprintf("curl -sS http://%s:8080/ && env -u NO_PROXY -u no_proxy curl -sS http://127.0.0.1:%d/; echo; curl -sS http://%s:%d/",
			up.IP, f.loopPort, up.HostIP, f.selfPort))
		if !strings.HasPrefix(out.Stdout, upstreamBody) {
			t.Errorf("an IP literal inside the CIDR entry: %q %q", out.Stdout, out.Stderr)
		}
		if strings.Count(out.Stdout, upstreamBody) != 1 || !strings.Contains(out.Stdout, "a loopback address") || !strings.Contains(out.Stdout, "the executor's own host") {
			t.Errorf("IP literals of the host (loopback, its own address inside the CIDR): %q", out.Stdout)
		}
	})

	t.Run("allowed-names-leading-to-the-host-or-metadata", func(t *testing.T) {
		// Positive controls: the host's own servers answer the host; there is no metadata server here, so for
		// meta.test the control is that the same entry form (a listed name, default port) reaches allowed.test.
		f.hostGet(t, "127.0.0.1", fmt.Sprintf("http://loop.test:%d/", f.loopPort))
		f.hostGet(t, up.HostIP, fmt.Sprintf("http://self.test:%d/", f.selfPort))
		out := f.run(t, fmt.Sprintf("curl -sS http://loop.test:%d/; echo; curl -sS http://self.test:%d/; echo; curl -sS http://meta.test/latest/meta-data/; echo; curl -sS http://meta6.test/; echo; curl -sS http://allowed.test/",
			f.loopPort, f.selfPort))
		for _, want := range []string{"loop.test (allowed by loop.test:", "resolves to 127.0.0.1, a loopback address",
			"self.test (allowed by self.test:", "an address of the executor's own host",
			"meta.test (allowed by meta.test) resolves to 169.254.169.254, a cloud metadata address",
			"resolves to fd00:ec2::254, a cloud metadata address"} {
			if !strings.Contains(out.Stdout, want) {
				t.Errorf("the refusals do not say %q:\n%s", want, out.Stdout)
			}
		}
		if strings.Count(out.Stdout, upstreamBody) != 1 || !strings.HasSuffix(out.Stdout, upstreamBody) {
			t.Errorf("only allowed.test may answer:\n%s", out.Stdout)
		}
		want := []string{fmt.Sprintf("loop.test:%d", f.loopPort), fmt.Sprintf("self.test:%d", f.selfPort), "meta.test:80", "meta6.test:80"}
		if !slices.Equal(out.NetworkDenied, want) {
			t.Errorf("network_denied %v, want %v", out.NetworkDenied, want)
		}
	})

	t.Run("process", func(t *testing.T) {
		start := sandboxtest.MustCall[protocol.StartProcessOutput](t, f.srv.Session, protocol.ToolStartProcess,
			protocol.StartProcessInput{Command: "curl -sS http://allowed.test/; curl -sS http://other.test/"})
		var last protocol.ReadProcessOutputOutput
		for range 60 {
			last = sandboxtest.MustCall[protocol.ReadProcessOutputOutput](t, f.srv.Session, protocol.ToolReadProcessOutput,
				protocol.ReadProcessOutputInput{ProcessID: start.ProcessID, WaitSeconds: 1, StdoutOffset: last.StdoutOffset, StderrOffset: last.StderrOffset})
			if !last.Running {
				break
			}
		}
		if last.Running || !slices.Equal(last.NetworkDenied, []string{"other.test:80"}) || !slices.Equal(hostsOf(protocol.RunCommandOutput{Network: last.Network}), []string{"allowed.test:80"}) {
			t.Errorf("a process's result: running %v, denied %v, network %+v", last.Running, last.NetworkDenied, last.Network)
		}
	})
}

// TestEgressRefusedInFallback: the fallback has no network namespace to confine the network in, so -net-allow is
// refused at start, saying why.
func TestEgressRefusedInFallback(t *testing.T) {
	allow, _ := egress.ParseAllowList("example.test")
	ws := t.TempDir()
	_, err := New(Config{Workspace: ws, CacheDir: filepath.Join(t.TempDir(), "cache"), NoNamespaces: true, Network: egress.Config{Allow: allow}}, nil)
	if err == nil || !strings.Contains(err.Error(), "-net-allow needs the local backend's namespace mode") {
		t.Fatalf("New in the fallback with -net-allow: %v", err)
	}
}

// TestEgressInitScriptNamesProxyVars: the init script spells the proxy variables itself; they must be
// egress.ProxyVars, all of them.
func TestEgressInitScriptNamesProxyVars(t *testing.T) {
	for _, k := range egress.ProxyVars {
		if !strings.Contains(nsInitScript, k+`="$__goalbox_l"`) {
			t.Errorf("nsInitScript does not export %s", k)
		}
	}
	if n := strings.Count(nsInitScript, `="$__goalbox_l"`); n != len(egress.ProxyVars) {
		t.Errorf("nsInitScript exports %d proxy variables, egress.ProxyVars has %d", n, len(egress.ProxyVars))
	}
}
