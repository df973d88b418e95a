package execserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// outputsServer is an executor over the local backend served on loopback HTTP, as the agent embeds it.
type outputsServer struct {
	ex  *execserver.Executor
	url string
	ws  string
}

func startOutputsServer(t *testing.T, cfg execserver.Config) outputsServer {
	t.Helper()
	cfg.ResourceLinks = true // these tests follow the links; TestNoResourceLinksByDefault the default
	return startOutputsServerAs(t, cfg)
}

func startOutputsServerAs(t *testing.T, cfg execserver.Config) outputsServer {
	t.Helper()
	return startOutputsServerToken(t, cfg, mcpserve.NoToken)
}

// startOutputsServerToken serves over HTTP with token as -token (several, comma-separated, tell stateless clients
// apart); connectAs sends one of them.
func startOutputsServerToken(t *testing.T, cfg execserver.Config, token string) outputsServer {
	t.Helper()
	g, err := pathguard.Open(t.TempDir(), pathguard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	b, err := local.New(local.Config{Workspace: g.Dir(), CacheDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ex, err := execserver.New(cfg, b, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Before the backend closes: the processes end and their layers are applied while the folders still exist.
	t.Cleanup(ex.Close)
	r, err := mcpserve.Start(ex.Server(), mcpserve.Config{Addr: "127.0.0.1:0", Token: token}, ex.Health, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return outputsServer{ex: ex, url: r.URL, ws: g.Dir()}
}

// connect opens a new MCP session (2025-11-25: these tests are about what a session scopes; stateless_test.go
// tests the stateless era's scope).
func (s outputsServer) connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	return s.connectVersion(t, mcptest.SessionEra)
}

// connectVersion connects a client pinned to a protocol version: a session under 2025-11-25, none under
// 2026-07-28.
func (s outputsServer) connectVersion(t *testing.T, version string) *mcp.ClientSession {
	t.Helper()
	return s.connectAs(t, version, "")
}

// connectAs connects a client pinned to a protocol version that sends the bearer token token ("" none).
func (s outputsServer) connectAs(t *testing.T, version, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "outputs-test", Version: "0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1, HTTPClient: &http.Client{Transport: mcptest.Bearer(token, nil)}}, mcptest.ClientOptions(version))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// run runs command and returns its structured result and its resource links.
func run(t *testing.T, cs *mcp.ClientSession, command string) (protocol.RunCommandOutput, []*mcp.ResourceLink) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolRunCommand, Arguments: map[string]any{"command": command}})
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error %s", command, res.Content[0].(*mcp.TextContent).Text)
	}
	var out protocol.RunCommandOutput
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	var links []*mcp.ResourceLink
	for _, c := range res.Content[1:] {
		link, ok := c.(*mcp.ResourceLink)
		if !ok {
			t.Fatalf("%s: content item %T after the JSON text, want only resource links", command, c)
		}
		links = append(links, link)
	}
	return out, links
}

// readWhole reads the output uri page by page, following next_offset, until _meta says it is complete and read.
func readWhole(t *testing.T, cs *mcp.ClientSession, uri string, length int) []byte {
	t.Helper()
	var all []byte
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("%s: still not at the end after 1000 pages", uri)
		}
		page := fmt.Sprintf("%s?offset=%d&length=%d", uri, len(all), length)
		res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: page})
		if err != nil {
			t.Fatalf("read %s: %v", page, err)
		}
		c := res.Contents[0]
		data := []byte(c.Text)
		if c.Blob != nil {
			data = c.Blob
		}
		if len(data) == 0 || len(data) > length {
			t.Fatalf("read %s: %d bytes", page, len(data))
		}
		if got := int(c.Meta["offset"].(float64)); got != len(all) {
			t.Fatalf("read %s: _meta offset %d", page, got)
		}
		all = append(all, data...)
		if next := int(c.Meta["next_offset"].(float64)); next != len(all) {
			t.Fatalf("read %s: _meta next_offset %d after %d bytes", page, next, len(all))
		}
		if size := int(c.Meta["size"].(float64)); len(all) == size && c.Meta["complete"] == true {
			return all
		}
	}
}

// TestFullOutputReadBackWhole: a command whose output passes the cap gets, in its result, the URI of each whole
// stream and a resource_link to it; resources/read returns every byte, text and binary, in pages, to the session
// that ran it, and to no other; the template is listed. When the session ends its outputs are freed.
func TestFullOutputReadBackWhole(t *testing.T) {
	s := startOutputsServer(t, execserver.Config{OutputCap: 4096})
	cs := s.connect(t)

	tmpl, err := cs.ListResourceTemplates(context.Background(), nil)
	if err != nil || len(tmpl.ResourceTemplates) != 1 || !strings.HasPrefix(tmpl.ResourceTemplates[0].URITemplate, protocol.OutputResourceScheme+"://") {
		t.Fatalf("resources/templates/list: %v, %+v", err, tmpl)
	}

	// stdout: text with multi-byte characters, so that pages end inside some; stderr: random bytes, kept in the
	// workspace to compare.
	out, links := run(t, cs, `i=0; while [ $i -lt 20000 ]; do echo "line $i: héllo wörld ✓"; i=$((i+1)); done; head -c 300000 /dev/urandom | tee noise.bin >&2`)
	var want bytes.Buffer
	for i := range 20000 {
		fmt.Fprintf(&want, "line %d: héllo wörld ✓\n", i)
	}
	noise, err := os.ReadFile(filepath.Join(s.ws, "noise.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if !out.StdoutTruncated || !out.StderrTruncated || out.StdoutResource == "" || out.StderrResource == "" {
		t.Fatalf("result: truncated %v %v, resources %q %q", out.StdoutTruncated, out.StderrTruncated, out.StdoutResource, out.StderrResource)
	}
	if len(links) != 2 || links[0].URI != out.StdoutResource || links[1].URI != out.StderrResource ||
		links[0].Size == nil || *links[0].Size != int64(want.Len()) || links[1].Size == nil || *links[1].Size != int64(len(noise)) {
		t.Fatalf("resource links %+v do not match the result's resources", links)
	}
	if got := readWhole(t, cs, out.StdoutResource, 100_001); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("stdout read back: %d bytes, want %d", len(got), want.Len())
	}
	if got := readWhole(t, cs, out.StderrResource, 65_536); !bytes.Equal(got, noise) {
		t.Errorf("stderr read back: %d bytes, want %d", len(got), len(noise))
	}
	// The URI alone is the first page, of the default length.
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: out.StdoutResource})
	if err != nil || !strings.HasPrefix(want.String(), res.Contents[0].Text) || len(res.Contents[0].Text) < 200_000 {
		t.Fatalf("first page: %v, %d bytes", err, len(res.Contents[0].Text))
	}

	// Output under the cap has no resource.
	if out, links := run(t, cs, "echo short"); out.StdoutResource != "" || out.StderrResource != "" || len(links) != 0 {
		t.Errorf("a short output got resources %q %q and %d links", out.StdoutResource, out.StderrResource, len(links))
	}

	other := s.connect(t)
	_, err = other.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: out.StdoutResource})
	if err == nil || !strings.Contains(err.Error(), "only by the MCP session whose command made it") {
		t.Fatalf("another session's read: %v, want a refusal", err)
	}

	if h := s.ex.Health().FullOutputs; h.Sessions != 1 || h.Bytes < int64(want.Len()+len(noise)) {
		t.Fatalf("health before the session ends: %+v", h)
	}
	cs.Close() // DELETE: the session ends
	deadline := time.Now().Add(10 * time.Second)
	for s.ex.Health().FullOutputs.Sessions != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the ended session's outputs are still held: %+v", s.ex.Health().FullOutputs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if h := s.ex.Health().FullOutputs; h.Bytes != 0 {
		t.Errorf("health after the session ended: %+v", h)
	}
}

// TestFullOutputBudgetEvictsOldestFirst: a session keeps at most its budget; the oldest outputs go first, and
// reading one says it was evicted and why. A stream larger than the whole budget is not kept at all.
func TestFullOutputBudgetEvictsOldestFirst(t *testing.T) {
	const budget = 2 << 20
	s := startOutputsServer(t, execserver.Config{OutputCap: 1024, OutputBudget: budget})
	cs := s.connect(t)
	print := func(kib int) string { return fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", kib<<10) }

	var uris []string
	for range 3 { // 3 × 900 KiB in a 2 MiB budget: the third evicts the first
		out, _ := run(t, cs, print(900))
		if out.StdoutResource == "" {
			t.Fatal("no resource for a truncated output")
		}
		uris = append(uris, out.StdoutResource)
	}
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uris[0]})
	if err == nil || !strings.Contains(err.Error(), "was evicted") || !strings.Contains(err.Error(), "oldest first") ||
		!strings.Contains(err.Error(), "-output-budget") {
		t.Fatalf("read of the oldest output: %v, want an eviction error that says why", err)
	}
	for _, uri := range uris[1:] {
		if got := readWhole(t, cs, uri, 1<<20); len(got) != 900<<10 || strings.Trim(string(got), "x") != "" {
			t.Errorf("%s: %d bytes read back", uri, len(got))
		}
	}
	if h := s.ex.Health().FullOutputs; h.Bytes > budget {
		t.Errorf("the session holds %d bytes, over its budget %d", h.Bytes, budget)
	}

	out, links := run(t, cs, print(3<<10))
	if !out.StdoutTruncated || out.StdoutResource != "" || len(links) != 0 {
		t.Errorf("a 3 MiB stream with a 2 MiB budget: truncated %v, resource %q, %d links; want no resource", out.StdoutTruncated, out.StdoutResource, len(links))
	}
	// It evicted everything older on its way.
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uris[2]}); err == nil || !strings.Contains(err.Error(), "was evicted") {
		t.Errorf("read after the budget was outgrown: %v", err)
	}
}

// TestFullOutputBadURIs: a read that names no output, or a page that does not exist, gets an error that says what
// is allowed.
func TestFullOutputBadURIs(t *testing.T) {
	s := startOutputsServer(t, execserver.Config{OutputCap: 1024})
	cs := s.connect(t)
	out, _ := run(t, cs, "head -c 5000 /dev/zero")
	for uri, want := range map[string]string{
		out.StdoutResource + "?offset=5000":        "past the end: the output has 5000 bytes",
		out.StdoutResource + "?offset=-1":          "a whole number from 0",
		out.StdoutResource + "?length=0":           "from 1 to",
		out.StdoutResource + "?length=99999999":    "from 1 to",
		out.StdoutResource + "?offset=1&offset=2":  "give it once",
		out.StdoutResource + "?page=2":             "offset and length only",
		"goalbox-output://aaaaaaaaaaaaaaaa/stdout": "this session has no such output",
		"goalbox-output://NOT-AN-ID/stdout":        "not the URI of an output",
	} {
		_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("read %s: %v, want an error containing %q", uri, err, want)
		}
	}
	if res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: out.StdoutResource + "?offset=4999"}); err != nil ||
		res.Contents[0].Text != "\x00" || res.Contents[0].Meta["complete"] != true {
		t.Errorf("the last byte: %v %+v", err, res)
	}
}

// TestFullOutputDisabled: with -output-budget -1 nothing is kept and no template is listed.
func TestFullOutputDisabled(t *testing.T) {
	s := startOutputsServer(t, execserver.Config{OutputCap: 1024, OutputBudget: -1})
	cs := s.connect(t)
	if out, links := run(t, cs, "head -c 5000 /dev/zero"); !out.StdoutTruncated || out.StdoutResource != "" || len(links) != 0 {
		t.Errorf("truncated %v, resource %q, %d links", out.StdoutTruncated, out.StdoutResource, len(links))
	}
	if cs.InitializeResult().Capabilities.Resources != nil {
		t.Error("the server offers resources with full outputs off")
	}
}

// TestNoResourceLinksByDefault: by default a truncated stream is named in the result's fields only, and the content
// is the one JSON text item, which every common client library carries to a model as it is; the stream is still
// read back whole by its URI. Control: with ResourceLinks, the same result carries the resource_link item.
func TestNoResourceLinksByDefault(t *testing.T) {
	for _, links := range []bool{false, true} {
		s := startOutputsServerAs(t, execserver.Config{OutputCap: 1024, ResourceLinks: links})
		cs := s.connect(t)
		out, got := run(t, cs, "head -c 5000 /dev/zero | tr '\\0' x")
		if out.StdoutResource == "" || !out.StdoutTruncated {
			t.Fatalf("links=%v: the truncated stdout is not named: %+v", links, out)
		}
		if want := map[bool]int{false: 0, true: 1}[links]; len(got) != want {
			t.Errorf("links=%v: %d resource_link items, want %d", links, len(got), want)
		}
		data, _ := readPages(t, cs, out.StdoutResource, 4096, 5000)
		if len(data) != 5000 {
			t.Errorf("links=%v: the stream read back by its URI has %d bytes, want 5000", links, len(data))
		}
	}
}
