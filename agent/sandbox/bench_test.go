package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/agent/sandbox"
	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCallRead16K is the agent's side of a tool call with a 16 KiB result, reading a 16 KiB file: "agent" is
// Client.Call, from the request's encoding to the loop.ToolResult; "go-sdk" is the same call through a plain go-sdk
// client session (CallTool, then the structured content re-encoded for the ToolResult), which is what Client.Call
// did before it took tool results apart itself. With GOALBOX_BENCH_FS_URL naming a filesystem server running in
// another process (scripts/bench.sh starts one), this process's CPU time per call is the client's alone and is
// reported as agent-cpu-us/op; without it the servers run in this process and process-cpu-us/op counts both sides.
//
// Each runs with the collector as its agent did: "go-sdk" at Go's default (GOGC 100, the agent before), "agent"
// and "agent-1B" at mcpserve.GCPercent, which the agent's main sets; "go-sdk-tuned" is the go-sdk client at that
// setting too, for the ratio of the decoding alone.
func BenchmarkCallRead16K(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	ctx := context.Background()
	sb, plain, metric := benchClients(b)
	line := "\tfmt.Fprintf(w, \"%6d\\t%s\\n\", i+1, line) // a line of code with \"quotes\"\n"
	content := strings.Repeat(line, 16<<10/len(line)+1)[:16<<10]
	write, _ := json.Marshal(map[string]string{"path": "bench/read16k.txt", "content": content})
	if res, err := sb.Call(ctx, protocol.ToolWriteFile, write); err != nil || res.IsError {
		b.Fatalf("write: %v %s", err, res.Text)
	}
	read := json.RawMessage(`{"path":"bench/read16k.txt"}`)

	goSDK := func(gcPercent int) func(b *testing.B) {
		return func(b *testing.B) {
			debug.SetGCPercent(gcPercent)
			cs := plain(b)
			benchCalls(b, metric, 16<<10, func() (int, int, error) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: protocol.ToolReadFile, Arguments: read})
				if err != nil || res.IsError {
					return 0, 0, fmt.Errorf("read: %v %v", err, res)
				}
				structured, err := json.Marshal(res.StructuredContent)
				return len(structured), len(res.Content[0].(*mcp.TextContent).Text), err
			})
		}
	}
	b.Run("go-sdk", goSDK(100))
	b.Run("go-sdk-tuned", goSDK(mcpserve.GCPercent))
	debug.SetGCPercent(mcpserve.GCPercent)
	b.Run("agent", func(b *testing.B) {
		benchCalls(b, metric, 16<<10, func() (int, int, error) {
			res, err := sb.Call(ctx, protocol.ToolReadFile, read)
			if err != nil || res.IsError {
				return 0, 0, fmt.Errorf("read: %v %s", err, res.Text)
			}
			return len(res.Structured), len(res.Text), nil
		})
	})
	// The same call for a one-byte file: what a call costs the agent whatever its result, the go-sdk client's
	// requests, goroutines and HTTP included. The 16 KiB result costs the agent its figure above less this one.
	if res, err := sb.Call(ctx, protocol.ToolWriteFile, json.RawMessage(`{"path":"bench/one.txt","content":"x"}`)); err != nil || res.IsError {
		b.Fatalf("write: %v %s", err, res.Text)
	}
	b.Run("agent-1B", func(b *testing.B) {
		benchCalls(b, metric, 1, func() (int, int, error) {
			res, err := sb.Call(ctx, protocol.ToolReadFile, json.RawMessage(`{"path":"bench/one.txt"}`))
			if err != nil || res.IsError || !strings.Contains(res.Text, `"content":"x"`) {
				return 0, 0, fmt.Errorf("read: %v %s", err, res.Text)
			}
			return len(res.Structured), len(res.Text), nil
		})
	})
}

// benchCalls warms up, then times call, which returns the sizes of the structured result and the text (each at
// least `least` bytes: the whole file in both), and reports this process's CPU time per call as metric.
func benchCalls(b *testing.B, metric string, least int, call func() (structured, text int, err error)) {
	for range 20 { // warm up connections and pools
		if _, _, err := call(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	for b.Loop() {
		structured, text, err := call()
		if err != nil || structured < least || text < least {
			b.Fatalf("%v: %d bytes structured, %d bytes text: the whole file should be in both", err, structured, text)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), metric)
}

// benchClients are the agent's client of the servers of the benchmark and a maker of plain go-sdk sessions to the
// same filesystem server: the one GOALBOX_BENCH_FS_URL names (with its token in GOALBOX_BENCH_FS_TOKEN), over
// HTTP, else both hosted here, over in-memory links as the agent hosts them.
func benchClients(b *testing.B) (*sandbox.Client, func(*testing.B) *mcp.ClientSession, string) {
	ctx := context.Background()
	if url := os.Getenv("GOALBOX_BENCH_FS_URL"); url != "" {
		ep := sandbox.Endpoint{URL: url, Token: os.Getenv("GOALBOX_BENCH_FS_TOKEN")}
		sb, err := sandbox.Connect(ctx, ep)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { sb.Close() })
		return sb, func(b *testing.B) *mcp.ClientSession {
			hc := &http.Client{Transport: bearer{ep.Token}}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, HTTPClient: hc}, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { cs.Close() })
			return cs
		}, "agent-cpu-us/op"
	}
	ws := b.TempDir()
	sb, err := sandbox.Host(ctx, sandbox.LocalOptions{Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sb.Close() })
	return sb.Client, func(b *testing.B) *mcp.ClientSession { return sandbox.PlainInMemory(b, ws) }, "process-cpu-us/op"
}

// bearer sends the token of a server running elsewhere.
type bearer struct{ token string }

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if t.token != "" {
		r.Header.Set("Authorization", "Bearer "+t.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}
