// Package mcptest is what the servers' tests share: fuzzing of the entry points of an MCP server served by mcpserve
// (its HTTP endpoint: methods, paths, headers, bodies, JSON-RPC batch shapes; and its stdio line transport), called
// with the server and a probe, a tool call that must still succeed after every input; and golden txtar files of what
// a server tells its clients (golden.go).
//
// The property, for every input: the server does not panic; it never answers 5xx except 503, which is documented
// (docs/serving.md: session cap, connection cap, shutting down); and a valid request still gets its answer.
package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Probe is the tool call that must succeed after each input.
type Probe struct {
	Tool      string
	Arguments map[string]any
}

// SessionPlaceholder in a fuzz input's headers or body is replaced by the ID of a live session, so that inputs
// reach the session's handlers and not only the "no such session" answer.
const SessionPlaceholder = "$SID"

// Paths the fuzzer picks from with its path byte.
var Paths = []string{"/mcp", "/healthz", "/", "/mcp/", "/MCP", "/mcp?x=1", "/mcp/../mcp", "//mcp"}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`

// stdHeaders is what a well-behaved client sends on a POST.
const stdHeaders = "Content-Type: application/json\nAccept: application/json, text/event-stream\nMcp-Protocol-Version: 2025-06-18\nMcp-Session-Id: " + SessionPlaceholder

// stateless is the header block of a 2026-07-28 request, and statelessMeta the _meta its params carry.
const (
	stateless     = "Content-Type: application/json\nAccept: application/json, text/event-stream\nMcp-Protocol-Version: 2026-07-28"
	statelessMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
)

// HTTPSeeds are the generic seeds of FuzzHTTP: the shapes a client sends, well-formed and not.
func HTTPSeeds() []struct {
	Method string
	Path   uint8
	Header string
	Body   []byte
} {
	type seed = struct {
		Method string
		Path   uint8
		Header string
		Body   []byte
	}
	noSession := "Content-Type: application/json\nAccept: application/json, text/event-stream"
	return []seed{
		{"POST", 0, noSession, []byte(initBody)},
		{"POST", 0, stdHeaders, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)},
		{"POST", 0, stdHeaders, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)},
		{"POST", 0, stdHeaders, []byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)},
		{"POST", 0, stdHeaders, []byte(`[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`)},
		{"POST", 0, strings.Replace(stdHeaders, "2025-06-18", "2025-03-26", 1), []byte(`[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":6,"method":"tools/list"}]`)},
		{"POST", 0, stdHeaders, []byte(`[]`)},
		{"POST", 0, stdHeaders, []byte(`[[[]]]`)},
		{"POST", 0, stdHeaders, []byte(`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`)},
		{"POST", 0, stdHeaders, []byte(`{"jsonrpc":"2.0","id":1e999,"method":"ping"}`)},
		{"POST", 0, stdHeaders, []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope","arguments":{}}}`)},
		{"POST", 0, stdHeaders, []byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":null,"arguments":[1,2]}}`)},
		{"POST", 0, stdHeaders, []byte(`{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}`)},
		{"POST", 0, stdHeaders, []byte(`{"jsonrpc":"2.0","id":10,"result":{}}`)},
		{"POST", 0, stdHeaders, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)},
		{"POST", 0, stdHeaders, []byte(`{"jsonrpc":"2.0","id":11,"method":"initialize","params":{}}`)},
		{"POST", 0, stdHeaders, []byte(`{"jsonrpc":"1.0","id":12,"method":"ping"}`)},
		{"POST", 0, stdHeaders, []byte("{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"ping\"}")},
		{"POST", 0, stdHeaders, []byte(`{"jsonrpc":"2.0","id":15,"method":"logging/setLevel","params":{"level":"debug"}}`)},
		{"POST", 0, stdHeaders, []byte("\xff\xfe{\"jsonrpc\":\"2.0\"}")},
		{"POST", 0, stdHeaders, nil},
		{"POST", 0, "Content-Type: text/plain\nMcp-Session-Id: " + SessionPlaceholder, []byte(`{"jsonrpc":"2.0","id":16,"method":"ping"}`)},
		{"POST", 0, stdHeaders + "\nMcp-Method: tools/call\nMcp-Name: x", []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"y"}}`)},
		{"POST", 0, stdHeaders + "\nLast-Event-ID: x_1", []byte(`{"jsonrpc":"2.0","id":18,"method":"ping"}`)},
		{"POST", 0, strings.Replace(stdHeaders, "2025-06-18", "2026-07-28", 1), []byte(`{"jsonrpc":"2.0","id":19,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)},
		{"POST", 0, strings.Replace(stdHeaders, "2025-06-18", "1999-01-01", 1), []byte(`{"jsonrpc":"2.0","id":20,"method":"ping"}`)},
		{"POST", 0, stdHeaders + "\nGoalbox-Call: forged.1", []byte(`{"jsonrpc":"2.0","id":21,"method":"ping"}`)},
		{"POST", 0, stdHeaders + "\nAuthorization: bearer x\nOrigin: http://evil.example", []byte(`{"jsonrpc":"2.0","id":22,"method":"ping"}`)},
		{"POST", 0, stdHeaders + "\nHost: evil.example", []byte(`{"jsonrpc":"2.0","id":23,"method":"ping"}`)},
		{"POST", 0, stdHeaders + "\nSec-Fetch-Site: cross-site", []byte(`{"jsonrpc":"2.0","id":24,"method":"ping"}`)},
		{"POST", 0, "Content-Type: application/json\nAccept: application/json, text/event-stream\nMcp-Session-Id: nope", []byte(`{"jsonrpc":"2.0","id":25,"method":"ping"}`)},
		{"GET", 0, "Accept: text/event-stream\nMcp-Session-Id: " + SessionPlaceholder, nil},
		{"GET", 0, "Accept: text/event-stream\nMcp-Session-Id: " + SessionPlaceholder + "\nLast-Event-ID: zz_-1", nil},
		{"GET", 0, "Accept: application/json", nil},
		{"DELETE", 0, "Mcp-Session-Id: " + SessionPlaceholder, nil},
		{"DELETE", 0, "", nil},
		{"PUT", 0, stdHeaders, []byte(`{}`)},
		{"OPTIONS", 0, "Origin: http://localhost", nil},
		{"GET", 1, "", nil},
		{"POST", 1, stdHeaders, []byte(`{}`)},
		{"GET", 2, "", nil},
		{"GET", 3, "", nil},
		{"POST", 4, stdHeaders, []byte(`{"jsonrpc":"2.0","id":26,"method":"ping"}`)},
		// The stateless era (2026-07-28): no session, the version in the header and the _meta; well-formed, with a
		// mismatched _meta, without the Mcp-Method header, a batch, a big id, and GET/DELETE it removed.
		{"POST", 0, stateless + "\nMcp-Method: server/discover", []byte(`{"jsonrpc":"2.0","id":27,"method":"server/discover","params":{` + statelessMeta + `}}`)},
		{"POST", 0, stateless + "\nMcp-Method: tools/list", []byte(`{"jsonrpc":"2.0","id":28,"method":"tools/list","params":{` + statelessMeta + `}}`)},
		{"POST", 0, stateless + "\nMcp-Method: tools/call\nMcp-Name: nope", []byte(`{"jsonrpc":"2.0","id":29,"method":"tools/call","params":{"name":"nope","arguments":{},` + statelessMeta + `}}`)},
		{"POST", 0, stateless + "\nMcp-Method: tools/list", []byte(`{"jsonrpc":"2.0","id":30,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`)},
		{"POST", 0, stateless, []byte(`{"jsonrpc":"2.0","id":31,"method":"tools/list","params":{` + statelessMeta + `}}`)},
		{"POST", 0, stateless + "\nMcp-Method: tools/list", []byte(`[{"jsonrpc":"2.0","id":32,"method":"tools/list","params":{` + statelessMeta + `}}]`)},
		{"POST", 0, stateless + "\nMcp-Method: tools/list", []byte(`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list","params":{` + statelessMeta + `}}`)},
		{"POST", 0, stateless + "\nMcp-Method: initialize", []byte(`{"jsonrpc":"2.0","id":33,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"f","version":"1"},` + statelessMeta + `}}`)},
		{"GET", 0, "Accept: text/event-stream\nMcp-Protocol-Version: 2026-07-28", nil},
		{"DELETE", 0, "Mcp-Protocol-Version: 2026-07-28\nMcp-Session-Id: " + SessionPlaceholder, nil},
	}
}

// FuzzHTTP serves srv with cfg on loopback and sends it each fuzz input as an HTTP request; seeds come from
// HTTPSeeds and the package's testdata/fuzz corpus.
func FuzzHTTP(f *testing.F, srv *mcp.Server, cfg mcpserve.Config, probe Probe) {
	for _, s := range HTTPSeeds() {
		f.Add(s.Method, s.Path, s.Header, s.Body)
	}
	cfg.Addr = "127.0.0.1:0"
	run, err := mcpserve.Start(srv, cfg, func() map[string]any { return map[string]any{"fuzz": true} }, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = run.Close() })
	// Every request carries the server's token (generated unless cfg sets one), so that the inputs reach what is
	// behind the token check; an input's own Authorization header replaces it.
	c := &httpTarget{url: run.URL, client: &http.Client{Transport: Bearer(run.Token, &http.Transport{MaxIdleConnsPerHost: 4})}, probe: probe}
	f.Fuzz(func(t *testing.T, method string, path uint8, header string, body []byte) {
		if c.sid == "" {
			c.sid = c.initialize(t)
		}
		url := strings.TrimSuffix(run.URL, "/mcp") + Paths[int(path)%len(Paths)]
		// A GET stream stays open until its session ends: the timeout ends it, which the server sees as a client
		// going away.
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(bytes.ReplaceAll(body, []byte(SessionPlaceholder), []byte(c.sid))))
		if err != nil {
			return // not a request a client can send
		}
		for line := range strings.SplitSeq(strings.ReplaceAll(header, SessionPlaceholder, c.sid), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if strings.EqualFold(k, "Host") {
				req.Host = v
				continue
			}
			if strings.EqualFold(k, "Authorization") {
				req.Header.Set(k, v)
				continue
			}
			req.Header.Add(k, v)
		}
		resp, err := c.client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<20))
			resp.Body.Close()
			if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("%s %s answered %d\nheaders %q\nbody %q", method, url, resp.StatusCode, header, body)
			}
		}
		c.check(t)
	})
}

type httpTarget struct {
	url    string
	client *http.Client
	probe  Probe
	sid    string
	ids    atomic.Int64
}

func (c *httpTarget) post(t *testing.T, sid, body string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatalf("the server no longer answers a valid request: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("the server no longer answers a valid request: %v", err)
	}
	return resp, string(b)
}

func (c *httpTarget) initialize(t *testing.T) string {
	t.Helper()
	resp, body := c.post(t, "", initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	c.post(t, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

// check calls the probe on the live session (a new one if the input ended it) and requires its result.
func (c *httpTarget) check(t *testing.T) {
	t.Helper()
	call := func() (*http.Response, string) {
		args, _ := json.Marshal(c.probe.Arguments)
		return c.post(t, c.sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":"probe-%d","method":"tools/call","params":{"name":%q,"arguments":%s}}`, c.ids.Add(1), c.probe.Tool, args))
	}
	resp, body := call()
	if resp.StatusCode == http.StatusNotFound {
		// The input deleted the session (or made it end): a new one must work.
		c.sid = c.initialize(t)
		resp, body = call()
	}
	if resp.StatusCode != 200 || !strings.Contains(body, `"result"`) || strings.Contains(body, `"isError":true`) {
		t.Fatalf("probe %s after the input: %d %s", c.probe.Tool, resp.StatusCode, body)
	}
}

// StdioSeeds are the generic seeds of FuzzStdio: lines a client might send, several per input.
func StdioSeeds() [][]byte {
	return [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`),
		[]byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":4,"method":"ping"}`),
		[]byte(`[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`),
		[]byte(`[]`),
		[]byte(`[1,2,3]`),
		[]byte(`{"jsonrpc":"2.0"}`),
		[]byte(`{"jsonrpc":"2.0","id":null,"method":"ping"}`),
		[]byte(`{"jsonrpc":"2.0","id":6,"result":{}}`),
		[]byte(`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}`),
		[]byte(`{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`),
		[]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"probe-1"}}`),
		[]byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"nope"}}`),
		[]byte(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"x","arguments":"not an object"}}`),
		[]byte("\x00\x01\x02"),
		[]byte("{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"ping\"} trailing"),
		[]byte(strings.Repeat("[", 10000)),
		[]byte("\r\n\r\n"),
		[]byte("not json"),
	}
}

// FuzzStdio serves one long-lived server on the stdio line transport and writes each fuzz input to it as one or
// more lines; after each, the probe must still be answered.
func FuzzStdio(f *testing.F, srv *mcp.Server, cfg mcpserve.Config, probe Probe) {
	for _, s := range StdioSeeds() {
		f.Add(s)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mcpserve.ServeStdio(ctx, srv, inR, outW, cfg) }()
	f.Cleanup(func() {
		cancel()
		inW.Close()
		<-done
		outW.Close()
	})
	lines := make(chan []byte, 1024)
	go func() {
		r := bufio.NewReaderSize(outR, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				close(lines)
				return
			}
			// Only the probes' answers are awaited; the answers to the inputs themselves are taken and dropped.
			if bytes.Contains(line, []byte(`"id":"probe-`)) {
				lines <- line
			}
		}
	}()
	write := func(t testing.TB, b []byte) {
		errc := make(chan error, 1)
		go func() { _, err := inW.Write(b); errc <- err }()
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("the server stopped reading: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the server stopped reading its input")
		}
	}
	write(f, []byte(initBody+"\n"+`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"))
	var ids atomic.Int64
	f.Fuzz(func(t *testing.T, input []byte) {
		write(t, append(bytes.Clone(input), '\n'))
		args, _ := json.Marshal(probe.Arguments)
		id := fmt.Sprintf("probe-%d", ids.Add(1))
		write(t, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":%q,"arguments":%s}}`+"\n", id, probe.Tool, args))
		deadline := time.After(10 * time.Second)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("the server ended after input %q", input)
				}
				if !bytes.Contains(line, []byte(`"id":"`+id+`"`)) {
					continue
				}
				if !bytes.Contains(line, []byte(`"result"`)) || bytes.Contains(line, []byte(`"isError":true`)) {
					t.Fatalf("probe after input %q: %s", input, line)
				}
				return
			case <-deadline:
				t.Fatalf("no answer to the probe after input %q", input)
			}
		}
	})
}
