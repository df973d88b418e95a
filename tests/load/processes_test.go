package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProcessBuffersRSS: the executor with its sessions full, every session running its most processes, each
// printing far more than its ring buffers hold, stays under a stated memory bound — the buffers' total
// (-process-buffer-total) plus a fixed cost per process — and gives the memory back when the sessions end. Before
// the total, every process took two 1 MiB buffers at start: this load (16 × 8 processes) would have held 256 MiB.
func TestProcessBuffersRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const (
		sessions, procs = 16, 8
		totalMiB        = 32
		// perProcessKiB is what a running process costs the server besides its buffers' bytes: the two 4 KiB floors,
		// goroutines, pipes and its entry in the table (measured about 60 KiB here; the bound allows twice that).
		perProcessKiB = 128
	)
	tmp := t.TempDir()
	_, execBin := binaries(t, tmp)
	ws := filepath.Join(tmp, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	ex := startServer(t, "executor", execBin, tmp, "-workspace", ws, "-max-sessions", fmt.Sprint(2*sessions),
		"-max-processes", fmt.Sprint(procs), "-process-buffer-total", fmt.Sprint(totalMiB<<20), "-output-budget", "-1", "-log-level", "warn")
	time.Sleep(time.Second)
	base, err := readProc(ex.pid)
	if err != nil {
		t.Fatal(err)
	}
	hc, tr := newHTTPClient(sessions)
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var clients []*mcpClient
	for i := range sessions {
		c := &mcpClient{url: ex.url, token: ex.token, hc: hc}
		if err := c.initialize(ctx, fmt.Sprintf("procs-%d", i)); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		for range procs {
			var out struct {
				ProcessID string `json:"process_id"`
			}
			// 3 MB of output, three times its buffer's most, then it waits.
			if err := c.call(ctx, "sandbox_start_process", map[string]any{"command": "head -c 3000000 /dev/zero | tr '\\0' x; sleep 600"}, &out); err != nil || out.ProcessID == "" {
				t.Fatalf("session %d: start a process: %v %+v", i, err, out)
			}
		}
	}
	// Until every process has printed: the buffers' bytes stop growing.
	var held, peak int64
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		h := processBuffers(t, ex)
		st, _ := readProc(ex.pid)
		peak = max(peak, st.rssKB)
		if h == held && h > 0 {
			break
		}
		held = h
	}
	// The bound: the buffers' total and a fixed cost per process, live on the heap; and for RSS twice that (the
	// Go collector lets the heap grow to twice what is live before it collects, GOGC=100) plus 64 MiB of runtime and timing (when the collector runs varies with the load).
	liveBound := int64(totalMiB<<10 + sessions*procs*perProcessKiB) // KiB above the start
	bound := base.rssKB + 2*liveBound + 64<<10
	gcs := ex.gcs()
	live := int64(0)
	if len(gcs) > 0 {
		live = int64(gcs[len(gcs)-1].liveMB) << 10
	}
	t.Logf("executor: RSS %.1f MiB at start, peak %.1f MiB with %d processes (%d MiB of buffers held, total %d MiB), heap live after the last GC %.1f MiB; bounds: live %.1f MiB above the start, RSS %.1f MiB",
		mib(base.rssKB), mib(peak), sessions*procs, held>>20, totalMiB, mib(live), mib(liveBound), mib(bound))
	if held > totalMiB<<20 {
		t.Errorf("the ring buffers hold %d bytes, past their total %d", held, totalMiB<<20)
	}
	if live > liveBound+base.rssKB {
		t.Errorf("the heap holds %.1f MiB live, past the bound", mib(live))
	}
	if peak > bound {
		t.Errorf("the executor's RSS peaked at %.1f MiB, past the bound %.1f MiB", mib(peak), mib(bound))
	}
	for _, c := range clients {
		_ = c.close(ctx)
	}
	if !waitFor(ctx, time.Minute, func() bool { return processBuffers(t, ex) == 0 }) {
		t.Errorf("the buffers still hold %d bytes after every session closed", processBuffers(t, ex))
	}
}

// processBuffers is the bytes the executor's ring buffers hold, from /healthz.
func processBuffers(t *testing.T, s *server) int64 {
	t.Helper()
	req, _ := http.NewRequest("GET", strings.TrimSuffix(s.url, "/mcp")+"/healthz", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := healthClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		ProcessBuffers struct {
			Bytes int64 `json:"bytes"`
		} `json:"process_buffers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h.ProcessBuffers.Bytes
}
