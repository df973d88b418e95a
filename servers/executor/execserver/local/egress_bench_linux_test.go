//go:build linux

package local

// Benchmarks of the egress proxy, each side by side in one run and reported as a ratio:
//
//	cd servers/executor && go test ./execserver/local -run '^$' -bench 'Egress' -count 3
//
// BenchmarkEgressIdleCommand: `true` on a backend with -net-allow (its proxy idle) against one without; the target
// is no measurable cost (ratio about 1). BenchmarkEgressDownload (root: it needs the upstream namespace): the same
// curl download from the host directly and from a sandbox through the proxy; the target is
// a ratio within 1.2.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress/egresstest"
)

// sideBySide runs a and b alternately, each iteration one of each (after wait, off the timer), and reports both
// medians and their ratio b/a.
func sideBySide(bm *testing.B, names [2]string, wait func(), a, b func()) {
	var da, db []time.Duration
	bm.ResetTimer()
	for i := 0; bm.Loop(); i++ {
		// Alternate which goes first, so that neither always runs on a machine the other just warmed.
		for j := range 2 {
			which := (i + j) % 2
			if wait != nil {
				bm.StopTimer()
				wait()
				bm.StartTimer()
			}
			t := time.Now()
			if which == 0 {
				a()
				da = append(da, time.Since(t))
			} else {
				b()
				db = append(db, time.Since(t))
			}
		}
	}
	bm.StopTimer()
	med := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	ma, mb := med(da), med(db)
	bm.ReportMetric(float64(ma.Microseconds())/1000, names[0]+"-p50-ms")
	bm.ReportMetric(float64(mb.Microseconds())/1000, names[1]+"-p50-ms")
	bm.ReportMetric(float64(mb)/float64(ma), "ratio")
}

func BenchmarkEgressIdleCommand(bm *testing.B) {
	plain, _ := newLocalTestBackend(bm, nil)
	allow, _ := egress.ParseAllowList("example.test,*.example.org")
	withNet, _ := newLocalTestBackend(bm, func(c *Config) { c.Network = egress.Config{Allow: allow} })
	req := backend.Request{Command: "true", Dir: ".", Timeout: time.Minute, Stdout: io.Discard, Stderr: io.Discard}
	run := func(be backend.Backend) func() {
		return func() {
			if res, err := be.Run(context.Background(), req); err != nil || res.ExitCode != 0 {
				bm.Fatalf("%+v %v", res, err)
			}
		}
	}
	wait := func() { plain.(*localBackend).nsPool.WaitReady(); withNet.(*localBackend).nsPool.WaitReady() }
	sideBySide(bm, [2]string{"no-net", "net-allow"}, wait, run(plain), run(withNet))
}

// BenchmarkEgressDownload is the same curl download from the host directly and from a sandbox through the proxy,
// two ways: over the bare veth pair, where the machine's CPU is the limit and the proxy's path (a second TCP
// connection over the sandbox's loopback, spliced kernel to kernel) shows whole; and over a link shaped to
// 1 Gbit/s (tbf on the upstream's end), nearer a registry's download, where the link is the limit.
func BenchmarkEgressDownload(bm *testing.B) {
	for _, c := range []struct {
		name  string
		bytes int
		rate  string
	}{{"veth", 256 << 20, ""}, {"link-1gbit", 64 << 20, "1gbit"}} {
		bm.Run(c.name, func(bm *testing.B) { egressDownload(bm, c.bytes, c.rate) })
	}
}

func egressDownload(bm *testing.B, size int, rate string) {
	up := egresstest.NewUpstream(bm, "allowed.test")
	if rate != "" {
		ipCmdTC(bm, up.Name, "qdisc", "add", "dev", up.NSIf, "root", "tbf", "rate", rate, "burst", "256kb", "latency", "50ms")
	}
	chunk := make([]byte, 1<<20)
	up.Serve(bm, 80, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		for range size / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	hosts := filepath.Join(bm.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte(up.IP+" allowed.test\n"), 0o644); err != nil {
		bm.Fatal(err)
	}
	allow, _ := egress.ParseAllowList("allowed.test," + up.Subnet)
	be, _ := newLocalTestBackend(bm, func(c *Config) { c.Network = egress.Config{Allow: allow, Resolver: egress.HostsFile(hosts)} })
	curl := "curl -sS -o /dev/null -w '%{size_download}' "
	direct := func() {
		out, err := exec.Command("sh", "-c", curl+"--noproxy '*' http://"+up.IP+"/").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != fmt.Sprint(size) {
			bm.Fatalf("direct download: %v %s", err, out)
		}
	}
	proxied := func() {
		var out strings.Builder
		res, err := be.Run(context.Background(), backend.Request{Command: curl + "http://allowed.test/", Dir: ".", Timeout: time.Minute, Stdout: &out, Stderr: &out})
		if err != nil || res.ExitCode != 0 || strings.TrimSpace(out.String()) != fmt.Sprint(size) {
			bm.Fatalf("download through the proxy: %v %+v %s", err, res, out.String())
		}
	}
	sideBySide(bm, [2]string{"direct", "proxy"}, be.(*localBackend).nsPool.WaitReady, direct, proxied)
}

func ipCmdTC(t testing.TB, netns string, args ...string) {
	t.Helper()
	if out, err := exec.Command("tc", append([]string{"-n", netns}, args...)...).CombinedOutput(); err != nil {
		t.Skipf("tc %s: %v: %s (no traffic shaping here)", strings.Join(args, " "), err, out)
	}
}
