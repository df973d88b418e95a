//go:build linux

// Package egresstest gives the egress tests of both backends and of the compose stack their upstreams: real servers
// in a network namespace of the test's own, reached over a veth pair with private addresses (10.231.X.0/30, X random
// per test so that concurrent runs do not collide), never any address outside the machine. The near end is .1 (on the
// host, or moved into the network namespace of a process the test names: a container's), the upstream's .2. Everything is
// removed at the end.
package egresstest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/servers/executor/execserver/internal/netns"
)

// Upstream is a network namespace with servers in it.
type Upstream struct {
	Name     string // netns
	Subnet   string // 10.231.X.0/30
	HostIP   string // the near end, 10.231.X.1: an address of the host's own (or of the namespace MoveNearEnd moved it to)
	IP       string // the upstream's, 10.231.X.2
	NSIf     string // the upstream's end of the veth pair
	nearIf   string // the other end
	CAPEM    []byte // the CA that signed the upstream's certificate
	CertPool *x509.CertPool
	tlsCert  tls.Certificate
}

// NeedNetRoot skips a test that needs root and ip(8), or fails it where CI=true says it must run.
func NeedNetRoot(t testing.TB) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "needs root (network namespaces and veth pairs for the upstream servers)"
	} else if _, err := exec.LookPath("ip"); err != nil {
		why = "needs ip(8) (iproute2) for the upstream network namespace"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("egress test: %s, and CI=true requires it", why)
	}
	t.Skipf("egress test: %s; skipped (CI=true makes this a failure)", why)
}

// IPCmd runs ip(8) and fails the test if it fails.
func IPCmd(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// NewUpstream makes the namespace, the veth pair with its near end on the host, and a test CA with a certificate for
// names.
func NewUpstream(t testing.TB, names ...string) *Upstream {
	t.Helper()
	NeedNetRoot(t)
	var b [2]byte
	_, _ = rand.Read(b[:])
	tag := fmt.Sprintf("%02x%02x", b[0], b[1])
	x := int(b[0])
	u := &Upstream{Name: "gbx-eg-" + tag, Subnet: fmt.Sprintf("10.231.%d.0/30", x),
		HostIP: fmt.Sprintf("10.231.%d.1", x), IP: fmt.Sprintf("10.231.%d.2", x)}
	u.nearIf, u.NSIf = "gbxe"+tag+"h", "gbxe"+tag+"u"
	IPCmd(t, "netns", "add", u.Name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", u.Name).Run() })
	IPCmd(t, "link", "add", u.nearIf, "type", "veth", "peer", "name", u.NSIf)
	// Deleting either end deletes the pair, wherever the near end went.
	t.Cleanup(func() { _ = exec.Command("ip", "-n", u.Name, "link", "del", u.NSIf).Run() })
	IPCmd(t, "link", "set", u.NSIf, "netns", u.Name)
	IPCmd(t, "addr", "add", u.HostIP+"/30", "dev", u.nearIf)
	IPCmd(t, "link", "set", u.nearIf, "up")
	IPCmd(t, "-n", u.Name, "addr", "add", u.IP+"/30", "dev", u.NSIf)
	IPCmd(t, "-n", u.Name, "link", "set", u.NSIf, "up")
	IPCmd(t, "-n", u.Name, "link", "set", "lo", "up")
	u.makeCert(t, names)
	return u
}

// MoveNearEnd puts the near end, with HostIP, into the network namespace of process pid: a server in a container
// of its own then reaches the upstream over that link, without any route or firewall rule of the host's, and the
// host no longer does.
func (u *Upstream) MoveNearEnd(t testing.TB, pid int) {
	t.Helper()
	IPCmd(t, "link", "set", u.nearIf, "netns", fmt.Sprint(pid))
	for _, args := range [][]string{{"addr", "add", u.HostIP + "/30", "dev", u.nearIf}, {"link", "set", u.nearIf, "up"}} {
		cmd := exec.Command("nsenter", append([]string{fmt.Sprintf("--net=/proc/%d/ns/net", pid), "ip"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ip %s in the network namespace of process %d: %v: %s", strings.Join(args, " "), pid, err, out)
		}
	}
}

func (u *Upstream) makeCert(t testing.TB, names []string) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "goalbox egress test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	u.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	u.CertPool = x509.NewCertPool()
	u.CertPool.AddCert(caCert)
	u.tlsCert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// Listen opens a TCP listener on the upstream's address inside its namespace.
func (u *Upstream) Listen(t testing.TB, port int) net.Listener {
	t.Helper()
	ln, err := netns.Listen("/run/netns/"+u.Name, net.JoinHostPort(u.IP, fmt.Sprint(port)))
	if err != nil {
		t.Fatalf("listen in the upstream namespace on %s:%d: %v", u.IP, port, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// Serve serves h on port of the upstream, over TLS when tlsOn.
func (u *Upstream) Serve(t testing.TB, port int, tlsOn bool, h http.Handler) {
	ln := u.Listen(t, port)
	if tlsOn {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{u.tlsCert}})
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// HostClient fetches from the host, outside any sandbox, at the upstream's address whatever the URL's name: the
// positive control of a refusal.
func (u *Upstream) HostClient(ip string) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(ip, port))
		},
		TLSClientConfig: &tls.Config{RootCAs: u.CertPool},
	}}
}
