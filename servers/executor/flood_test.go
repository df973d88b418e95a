package main

import (
	"context"
	"encoding/json"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMainSessionFloodSparesRunningProcess is the session-flood attack on the executor's binary: a client's session starts
// a background process and goes idle past -session-keep-active; another client opens many sessions at once. The
// process must still run and its session still answer; the flood is refused past -max-sessions with a 503 that
// says why (positive control: the cap is reached and refuses).
//
// The keep-active time bounds the flood too: a flood session idle that long may be closed for a later one, and the
// count of 7 would no longer hold. 5 s, not 1 s: 64 requests on a loaded machine can take more than a second.
func TestMainSessionFloodSparesRunningProcess(t *testing.T) {
	const keep = 5 * time.Second
	addr, _ := startMain(t, nil, "-workspace", t.TempDir(), "-cache-dir", t.TempDir(),
		"-max-sessions", "8", "-max-sessions-per-client", "8", "-session-keep-active", keep.String())
	url := "http://" + addr + protocol.EndpointPath
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "victim"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true},
		mcptest.ClientOptions(mcptest.SessionEra)) // a session: the flood is of sessions, and the victim holds one
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: protocol.ToolStartProcess, Arguments: protocol.StartProcessInput{Command: "sleep 600"}})
	if err != nil || res.IsError {
		t.Fatalf("start process: %v %+v", err, res)
	}
	var started protocol.StartProcessOutput
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &started)
	time.Sleep(keep + 500*time.Millisecond) // the victim's session idle past the keep-active time

	var mu sync.Mutex
	statuses := map[int]int{}
	var refusal string
	var wg sync.WaitGroup
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	flood := time.Now()
	for range 64 {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := hc.Do(req)
			if err != nil {
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			statuses[resp.StatusCode]++
			if resp.StatusCode == http.StatusServiceUnavailable {
				refusal = string(body)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	t.Logf("the flood took %v", time.Since(flood).Round(time.Millisecond))
	if statuses[200] != 7 || statuses[http.StatusServiceUnavailable] != 57 || !strings.Contains(refusal, "never closed to make room") {
		t.Errorf("the flood got %v (%s); want 7 sessions and 57 refusals with 503 saying why", statuses, refusal)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: protocol.ToolReadProcessOutput, Arguments: protocol.ReadProcessOutputInput{ProcessID: started.ProcessID}})
	if err != nil || res.IsError {
		t.Fatalf("the victim's session after the flood: %v %+v", err, res)
	}
	if out, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(out), `"running":true`) {
		t.Errorf("the victim's process after the flood: %s", out)
	}
}
