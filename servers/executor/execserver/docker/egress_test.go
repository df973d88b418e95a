//go:build linux

package docker

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress/egresstest"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// fetchProgram is the HTTP client the egress test runs in the container (the test image has no curl): Go's
// net/http with its usual proxy handling (HTTP_PROXY, HTTPS_PROXY, NO_PROXY), or none with -direct.
const fetchProgram = `package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

type headers []string

func (h *headers) String() string     { return "" }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

func main() {
	direct := flag.Bool("direct", false, "no proxy")
	ca := flag.String("ca", "", "CA file")
	var hs headers
	flag.Var(&hs, "H", "header")
	flag.Parse()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if *direct {
		tr.Proxy = nil
	}
	if *ca != "" {
		pem, err := os.ReadFile(*ca)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	req, _ := http.NewRequest("GET", flag.Arg(0), nil)
	for _, h := range hs {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	b, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s", resp.StatusCode, b)
}
`

// buildFetch builds fetchProgram, static, into the workspace.
func buildFetch(t *testing.T, ws string) {
	t.Helper()
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module fetch\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(src, "main.go"), []byte(fetchProgram), 0o644)
	cmd := exec.Command("go", "build", "-o", filepath.Join(ws, "fetch"), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the fetch program: %v\n%s", err, out)
	}
	os.Lchown(filepath.Join(ws, "fetch"), dockerTestUID, dockerTestUID)
}

const dockerUpstreamBody = "hello from the upstream\n"

// TestDockerEgressAllowList: -net-allow on the docker backend, against upstreams in a network namespace of the
// test's own (as the local backend's TestEgressAllowList): an allowed host over HTTP and HTTPS, a host not listed
// refused and in network_denied, a connection around the proxy going nowhere, names leading to the host itself and
// to metadata refused; each refusal with its positive control from the host.
func TestDockerEgressAllowList(t *testing.T) {
	egresstest.NeedNetRoot(t)
	dockerRequire(t)
	up := egresstest.NewUpstream(t, "allowed.test", "other.test")
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, dockerUpstreamBody) })
	up.Serve(t, 80, false, hello)
	up.Serve(t, 443, true, hello)
	ln, err := net.Listen("tcp", up.HostIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	self := &http.Server{Handler: hello}
	go self.Serve(ln)
	t.Cleanup(func() { self.Close() })
	selfPort := ln.Addr().(*net.TCPAddr).Port
	hosts := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hosts, []byte(fmt.Sprintf("%s allowed.test other.test\n169.254.169.254 meta.test\n%s self.test\n", up.IP, up.HostIP)), 0o644)
	allow, err := egress.ParseAllowList(fmt.Sprintf("allowed.test,meta.test,self.test:%d,%s", selfPort, up.Subnet))
	if err != nil {
		t.Fatal(err)
	}
	b, ws := newDockerTestBackend(t, func(c *Config) { c.Network = egress.Config{Allow: allow, Resolver: egress.HostsFile(hosts)} })
	buildFetch(t, ws)
	os.WriteFile(filepath.Join(ws, "ca.pem"), up.CAPEM, 0o644)
	srv := sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil)
	run := func(command string) protocol.RunCommandOutput {
		t.Helper()
		return sandboxtest.MustCall[protocol.RunCommandOutput](t, srv.Session, protocol.ToolRunCommand, protocol.RunCommandInput{Command: command, TimeoutSeconds: 60})
	}
	hostGet := func(ip, url string) {
		t.Helper()
		resp, err := up.HostClient(ip).Get(url)
		if err != nil {
			t.Fatalf("positive control: %s from the host: %v", url, err)
		}
		resp.Body.Close()
	}

	if eg := b.Confinement().Egress; eg == nil || !slices.Contains(eg.Allow, "allowed.test") {
		t.Errorf("the confinement report has no egress: %+v", eg)
	}
	out := run("./fetch http://allowed.test/ && ./fetch -ca ca.pem https://allowed.test/")
	if out.ExitCode != 0 || out.Stdout != "200 "+dockerUpstreamBody+"200 "+dockerUpstreamBody {
		t.Fatalf("HTTP and HTTPS to an allowed host: exit %d %q %q", out.ExitCode, out.Stdout, out.Stderr)
	}
	if len(out.Network) != 2 || out.Network[0].Host != "allowed.test:80" || out.Network[1].Host != "allowed.test:443" {
		t.Errorf("network: %+v", out.Network)
	}

	hostGet(up.IP, "http://other.test/")
	out = run("./fetch http://other.test/")
	if !strings.HasPrefix(out.Stdout, "403 ") || !strings.Contains(out.Stdout, "refused other.test:80 (rule: allow-list)") || !slices.Equal(out.NetworkDenied, []string{"other.test:80"}) {
		t.Errorf("a host not listed: %q, network_denied %v", out.Stdout, out.NetworkDenied)
	}

	hostGet(up.IP, "http://"+up.IP+"/")
	out = run("./fetch -direct http://" + up.IP + "/")
	if out.ExitCode == 0 || strings.Contains(out.Stdout, dockerUpstreamBody) {
		t.Errorf("a connection around the proxy reached the upstream: %q", out.Stdout)
	}

	hostGet(up.HostIP, fmt.Sprintf("http://self.test:%d/", selfPort))
	out = run(fmt.Sprintf("./fetch http://self.test:%d/; ./fetch http://meta.test/", selfPort))
	if strings.Contains(out.Stdout, dockerUpstreamBody) || !strings.Contains(out.Stdout, "an address of the executor's own host") ||
		!strings.Contains(out.Stdout, "169.254.169.254, a cloud metadata address") {
		t.Errorf("names leading to the host and to metadata: %q", out.Stdout)
	}
	if want := []string{fmt.Sprintf("self.test:%d", selfPort), "meta.test:80"}; !slices.Equal(out.NetworkDenied, want) {
		t.Errorf("network_denied %v, want %v", out.NetworkDenied, want)
	}
}

// TestDockerEgressSecrets: -secret on the docker backend: the placeholder in the container, the real value put in
// only for the secret's host over HTTPS (the container trusts the proxy's CA through SSL_CERT_FILE), refused over
// plain HTTP; the real value nowhere in the container. Control: the upstream refuses the placeholder from the host.
func TestDockerEgressSecrets(t *testing.T) {
	egresstest.NeedNetRoot(t)
	dockerRequire(t)
	const real = "docker-real-value-5e2a"
	t.Setenv("GOALBOX_TEST_DOCKER_SECRET", real)
	up := egresstest.NewUpstream(t, "secret.test")
	up.Serve(t, 443, true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+real {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, "authorized\n")
	}))
	up.Serve(t, 80, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain answered\n") }))
	hosts := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hosts, []byte(up.IP+" secret.test\n"), 0o644)
	allow, _ := egress.ParseAllowList("secret.test," + up.Subnet)
	tok, err := egress.ParseSecret("TOKEN=env:GOALBOX_TEST_DOCKER_SECRET@secret.test")
	if err != nil {
		t.Fatal(err)
	}
	b, ws := newDockerTestBackend(t, func(c *Config) {
		c.Network = egress.Config{Allow: allow, Resolver: egress.HostsFile(hosts), Secrets: []egress.Secret{tok}, UpstreamCA: up.CAPEM}
	})
	buildFetch(t, ws)
	srv := sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil)
	run := func(command string) protocol.RunCommandOutput {
		t.Helper()
		return sandboxtest.MustCall[protocol.RunCommandOutput](t, srv.Session, protocol.ToolRunCommand, protocol.RunCommandInput{Command: command, TimeoutSeconds: 60})
	}
	req, _ := http.NewRequest("GET", "https://secret.test/", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Placeholder())
	if resp, err := up.HostClient(up.IP).Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("control: the upstream takes the placeholder: %v %v", resp, err)
	}
	out := run(`./fetch -H "Authorization: Bearer $TOKEN" https://secret.test/; ./fetch -H "Authorization: Bearer $TOKEN" http://secret.test/; echo; echo "$TOKEN"; env | grep -c ` + real + `; true`)
	lines := strings.Split(out.Stdout, "\n")
	if len(lines) < 4 || lines[0] != "200 authorized" || !strings.Contains(lines[1], "secret TOKEN") || !strings.Contains(out.Stdout, tok.Placeholder()+"\n0\n") {
		t.Errorf("secrets in a container: %q %q", out.Stdout, out.Stderr)
	}
	if strings.Contains(out.Stdout, real) || !slices.Equal(out.NetworkDenied, []string{"secret.test:80"}) {
		t.Errorf("the real value in the output, or network_denied %v", out.NetworkDenied)
	}
}
