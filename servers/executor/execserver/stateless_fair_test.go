package execserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stateless store's budget in these tests: -output-total 4 MiB, so requests without a session share 2 MiB.
var fairOutputs = execserver.Config{OutputCap: 1024, OutputBudget: 2 << 20, OutputTotal: 4 << 20}

// printBytes is a command that prints n bytes of c.
func printBytes(n int, c string) string {
	return "head -c " + strconv.Itoa(n) + " /dev/zero | tr '\\0' " + c
}

// readRaw reads uri in a stateless request of its own over HTTP, as a client without the SDK would: the status
// and the body.
func readRaw(t *testing.T, url, uri string) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + uri + `","_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/read", "Mcp-Name": uri} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// readErr is the error of reading uri whole.
func readErr(cs *mcp.ClientSession, uri string) error {
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	return err
}

// TestStatelessUnreadOutputNotEvicted: the attack. Two stateless clients share one token, so they cannot be
// told apart; alice keeps a 1.2 MB output unread while mallory runs 0.6 MB outputs past the store's 2 MiB. Alice's
// output is still whole; mallory's that found no room is not kept, and says why. Positive control: once alice
// has read hers to its end, mallory's next output takes its room (before, the oldest went first: alice's).
func TestStatelessUnreadOutputNotEvicted(t *testing.T) {
	s := startOutputsServer(t, fairOutputs)
	alice, mallory := s.connectVersion(t, mcptest.StatelessEra), s.connectVersion(t, mcptest.StatelessEra)
	mine, _ := run(t, alice, printBytes(1200000, "a"))
	if mine.StdoutResource == "" {
		t.Fatalf("alice's output was not kept: %+v", mine)
	}
	first, _ := run(t, mallory, printBytes(600000, "m"))
	second, _ := run(t, mallory, printBytes(600000, "n"))
	if first.StdoutResource == "" || second.StdoutResource != "" {
		t.Errorf("mallory's outputs past the store: kept %q and %q, want the first only", first.StdoutResource, second.StdoutResource)
	}
	if got := readWhole(t, alice, mine.StdoutResource, 1<<20); len(got) != 1200000 || strings.Trim(string(got), "a") != "" {
		t.Fatalf("alice's unread output after mallory's: %d bytes", len(got))
	}
	third, _ := run(t, mallory, printBytes(600000, "o"))
	if third.StdoutResource == "" {
		t.Errorf("control: mallory's output after alice read hers was not kept")
	}
	if err := readErr(alice, mine.StdoutResource); err == nil || !strings.Contains(err.Error(), "it had been read to its end") {
		t.Errorf("control: alice's output, read and then pushed out: %v", err)
	}
	// On the wire, as docs/serving.md gives it: JSON-RPC's invalid params with the uri in data (MCP's resource not
	// found), which the 2026-07-28 transport answers with HTTP 400.
	code, body := readRaw(t, s.url, mine.StdoutResource)
	var rpc struct {
		Error struct {
			Code    int
			Message string
			Data    struct{ URI string }
		}
	}
	if err := json.Unmarshal([]byte(body), &rpc); err != nil || code != http.StatusBadRequest || rpc.Error.Code != -32602 ||
		!strings.Contains(rpc.Error.Message, "was evicted at") || rpc.Error.Data.URI == "" {
		t.Errorf("reading a pushed-out output on the wire: %d %s", code, body)
	}
	readWhole(t, mallory, first.StdoutResource, 1<<20)
}

// TestStatelessClientsToldApartByToken: with -token tok-a,tok-b each token is a client. One client runs at most
// -max-processes at once and keeps at most half the stateless store, evicting its own oldest output past it, never
// the other's. Positive control: with one token, one client takes the whole stateless process cap and the other
// is refused.
func TestStatelessClientsToldApartByToken(t *testing.T) {
	cfg := fairOutputs
	cfg.MaxProcesses, cfg.StatelessProcesses = 1, 3
	s := startOutputsServerToken(t, cfg, "tok-a,tok-b")
	a, b := s.connectAs(t, mcptest.StatelessEra, "tok-a"), s.connectAs(t, mcptest.StatelessEra, "tok-b")
	startProcess(t, a, "sleep 600")
	msg := toolError(t, a, protocol.ToolStartProcess, protocol.StartProcessInput{Command: "sleep 600"})
	if !strings.Contains(msg, "this client (token 1 of the executor's -token) already runs 1 processes") || !strings.Contains(msg, "-max-processes") {
		t.Errorf("a second process of one client: %s", msg)
	}
	startProcess(t, b, "sleep 600")

	aFirst, _ := run(t, a, printBytes(700000, "a"))
	bOut, _ := run(t, b, printBytes(700000, "b"))
	aSecond, _ := run(t, a, printBytes(700000, "c"))
	if aFirst.StdoutResource == "" || bOut.StdoutResource == "" || aSecond.StdoutResource == "" {
		t.Fatalf("outputs not kept: %q %q %q", aFirst.StdoutResource, bOut.StdoutResource, aSecond.StdoutResource)
	}
	if err := readErr(a, aFirst.StdoutResource); err == nil || !strings.Contains(err.Error(), "a newer output of the same client (token 1 of -token)") {
		t.Errorf("client a's first output, past its half: %v", err)
	}
	if got := readWhole(t, b, bOut.StdoutResource, 1<<20); len(got) != 700000 {
		t.Errorf("client b's output: %d bytes", len(got))
	}

	one := startOutputsServerToken(t, cfg, "tok-a")
	a, b = one.connectAs(t, mcptest.StatelessEra, "tok-a"), one.connectAs(t, mcptest.StatelessEra, "tok-a")
	for range 3 {
		startProcess(t, a, "sleep 600")
	}
	if msg := toolError(t, b, protocol.ToolStartProcess, protocol.StartProcessInput{Command: "sleep 600"}); !strings.Contains(msg, "already run 3 processes together") {
		t.Errorf("control: one token, another client past the cap: %s", msg)
	}
}

// TestStatelessSharedBetweenTokens: with three tokens, -max-processes 2 and -stateless-processes 3, each client
// runs at most its even share, one: the first client's second process is refused saying so, and the other two each
// start theirs. Before, the first client took its -max-processes (2), the second the last place, and the third
// could start nothing until one of theirs ended. Likewise each keeps at most a third of the stateless store: two
// clients writing half of it each evict their own older outputs, and the third's output is kept (before, the two
// halves left it no room). Positive controls: each client's one process runs; the outputs that stay read whole.
func TestStatelessSharedBetweenTokens(t *testing.T) {
	cfg := fairOutputs
	cfg.MaxProcesses, cfg.StatelessProcesses = 2, 3
	s := startOutputsServerToken(t, cfg, "tok-a,tok-b,tok-c")
	a, b, c := s.connectAs(t, mcptest.StatelessEra, "tok-a"), s.connectAs(t, mcptest.StatelessEra, "tok-b"), s.connectAs(t, mcptest.StatelessEra, "tok-c")
	startProcess(t, a, "sleep 600")
	msg := toolError(t, a, protocol.ToolStartProcess, protocol.StartProcessInput{Command: "sleep 600"})
	if !strings.Contains(msg, "this client (token 1 of the executor's -token) already runs 1 processes") ||
		!strings.Contains(msg, "its share of the executor's -stateless-processes, 3 shared evenly between the 3 tokens of its -token") {
		t.Errorf("the first client's second process: %s", msg)
	}
	startProcess(t, b, "sleep 600")
	startProcess(t, c, "sleep 600")

	// Kept outputs: each client keeps at most a third of the 2 MiB store, so a and b writing 1 MB each (half the
	// store, which they kept before) leave room for c's.
	aFirst, _ := run(t, a, printBytes(500000, "a"))
	aSecond, _ := run(t, a, printBytes(500000, "b"))
	run(t, b, printBytes(500000, "c"))
	bSecond, _ := run(t, b, printBytes(500000, "d"))
	cOut, _ := run(t, c, printBytes(300000, "e"))
	if cOut.StdoutResource == "" {
		t.Fatalf("the third client's output was not kept")
	}
	if err := readErr(a, aFirst.StdoutResource); err == nil || !strings.Contains(err.Error(), "one client keeps at most its share, 699050 bytes, of the 2097152") {
		t.Errorf("the first client's first output, past its third: %v", err)
	}
	for _, o := range []struct {
		cs  *mcp.ClientSession
		uri string
		n   int
	}{{a, aSecond.StdoutResource, 500000}, {b, bSecond.StdoutResource, 500000}, {c, cOut.StdoutResource, 300000}} {
		if got := readWhole(t, o.cs, o.uri, 1<<20); len(got) != o.n {
			t.Errorf("control: %s: %d bytes, want %d", o.uri, len(got), o.n)
		}
	}
}
