package fsserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/servers/filesystem/fsserver"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The filesystem server binary for the stdio tests and benchmarks, built on first use (fuzz workers and tests that
// need no binary never build it) into a folder TestMain removes.
var (
	binDir     string
	binOnce    sync.Once
	serverPath string
	binErr     error
)

func serverBin(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		serverPath = filepath.Join(binDir, "filesystem")
		out, err := exec.Command("go", "build", "-o", serverPath, "github.com/goalbox/goalbox/servers/filesystem").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("building the server binary: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return serverPath
}

func TestMain(m *testing.M) {
	flag.Parse()
	var err error
	if binDir, err = os.MkdirTemp("", "fsserver-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// Checkpoint stores go under the user's cache folder: the tests' own, in both transports, never the user's.
	os.Setenv("XDG_CACHE_HOME", filepath.Join(binDir, "cache"))
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// setup is how a test wants its server: the tools' limits and the guard's. The protected project files are the
// defaults adjusted by protect and unprotect, as the binary's -protect and -unprotect adjust them (guard.Protection
// is set from them).
type setup struct {
	opts      fsserver.Options
	guard     pathguard.Options
	protect   []string
	unprotect []string
}

// flags turns the setup into the command line of the binary, so both transports run the same configuration.
func (s setup) flags(workspace string) []string {
	args := []string{"-stdio", "-workspace", workspace, "-log-level", "error"}
	add := func(name string, v int64) {
		if v > 0 {
			args = append(args, fmt.Sprintf("-%s=%d", name, v))
		}
	}
	add("max-read-lines", int64(s.opts.MaxReadLines))
	add("max-content-bytes", int64(s.opts.MaxReadContentBytes))
	add("max-binary-read-bytes", s.opts.MaxBinaryReadBytes)
	add("max-list-entries", int64(s.opts.MaxListEntries))
	add("max-search-results", int64(s.opts.MaxSearchResults))
	add("max-read-bytes", s.guard.MaxReadBytes)
	add("max-write-bytes", s.guard.MaxWriteBytes)
	add("max-tree-depth", int64(s.guard.MaxTreeDepth))
	add("max-tree-entries", int64(s.guard.MaxTreeEntries))
	// The binary's disk cap defaults to 16 GiB, the guard's to none: say it, so both transports run alike.
	args = append(args, fmt.Sprintf("-max-workspace-bytes=%d", s.guard.MaxWorkspaceBytes))
	if s.guard.AdvertisedRoot != "" {
		args = append(args, "-advertised-root", s.guard.AdvertisedRoot)
	}
	for _, p := range s.protect {
		args = append(args, "-protect", p)
	}
	for _, p := range s.unprotect {
		args = append(args, "-unprotect", p)
	}
	return args
}

// transport connects a client to a filesystem server over workspace.
type transport struct {
	name    string
	connect func(t testing.TB, workspace string, s setup) *mcp.ClientSession
}

// transports are both transports in both protocol eras (mcptest.Eras): every test that runs on each transport runs
// against a 2025-11-25 client (initialize, a session) and a 2026-07-28 one (stateless over HTTP).
var transports = func() []transport {
	var ts []transport
	for _, v := range mcptest.Eras {
		ts = append(ts,
			transport{"http/" + v, func(t testing.TB, ws string, s setup) *mcp.ClientSession {
				_, run := startHTTP(t, ws, s, mcpserve.Config{})
				return connectURLVersion(t, run.URL, v)
			}},
			transport{"stdio/" + v, func(t testing.TB, ws string, s setup) *mcp.ClientSession {
				cs, _ := startStdioVersion(t, ws, s, v)
				return cs
			}})
	}
	return ts
}()

// startHTTP serves the workspace over streamable HTTP on a free loopback port, as the agent embeds it.
func startHTTP(t testing.TB, workspace string, s setup, cfg mcpserve.Config) (*mcp.Server, *mcpserve.Running) {
	t.Helper()
	p, err := pathguard.ParseProtection(s.protect, s.unprotect)
	if err != nil {
		t.Fatal(err)
	}
	s.guard.Protection = p
	g, err := pathguard.Open(workspace, s.guard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	files := fsserver.New(g, s.opts)
	srv := files.Server()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Token == "" {
		// These tests are about the file tools; pkg/mcpserve tests the token the servers require by default.
		cfg.Token = mcpserve.NoToken
	}
	if cfg.AuditLog != "" {
		closer, err := mcpserve.OpenAudit(srv, fsserver.Name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closer.Close() })
	}
	run, err := mcpserve.Start(srv, cfg, files.Health, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close() })
	return srv, run
}

func connectHTTP(t testing.TB, workspace string, s setup) *mcp.ClientSession {
	t.Helper()
	_, run := startHTTP(t, workspace, s, mcpserve.Config{})
	return connectURL(t, run.URL)
}

// connectURL connects a client speaking the go-sdk's newest protocol (2026-07-28: stateless).
func connectURL(t testing.TB, url string) *mcp.ClientSession {
	t.Helper()
	return connectURLVersion(t, url, "")
}

// connectURLVersion connects a client pinned to a protocol version ("" for the SDK's newest).
func connectURLVersion(t testing.TB, url, version string) *mcp.ClientSession {
	t.Helper()
	// Each session gets its own connection pool, as separate client processes would have: sharing
	// http.DefaultTransport (two idle connections per host) would make concurrent clients reconnect on every call.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 8
	t.Cleanup(tr.CloseIdleConnections)
	client := mcp.NewClient(&mcp.Implementation{Name: "fsserver-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tr}},
		mcptest.ClientOptions(version))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func connectStdio(t testing.TB, workspace string, s setup) *mcp.ClientSession {
	t.Helper()
	cs, _ := startStdio(t, workspace, s)
	return cs
}

// startStdio starts the server binary over stdio and returns the connected session and the server's pid.
func startStdio(t testing.TB, workspace string, s setup) (*mcp.ClientSession, int) {
	t.Helper()
	return startStdioVersion(t, workspace, s, "")
}

// startStdioVersion is startStdio with the client pinned to a protocol version ("" for the SDK's newest).
func startStdioVersion(t testing.TB, workspace string, s setup, version string) (*mcp.ClientSession, int) {
	t.Helper()
	cmd := exec.Command(serverBin(t), s.flags(workspace)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "fsserver-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, mcptest.ClientOptions(version))
	if err != nil {
		t.Fatalf("start %v: %v; stderr: %s", cmd.Args, err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	return cs, cmd.Process.Pid
}

// result is a tool call's outcome as a client sees it.
type result struct {
	isError bool
	text    string          // the first text content
	raw     json.RawMessage // structuredContent
}

// call calls a tool and checks the contract every result keeps: a tool error has a message and no structured
// content; a success has structuredContent and the same JSON as text.
func call(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: protocol error: %v", tool, args, err)
	}
	var r result
	r.isError = res.IsError
	if len(res.Content) != 1 {
		t.Fatalf("%s: want one content block, got %d", tool, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T, want text", tool, res.Content[0])
	}
	r.text = tc.Text
	if r.isError {
		if r.text == "" {
			t.Fatalf("%s: tool error without a message", tool)
		}
		return r
	}
	if res.StructuredContent == nil {
		t.Fatalf("%s: success without structuredContent", tool)
	}
	r.raw, err = json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var fromText any
	if err := json.Unmarshal([]byte(r.text), &fromText); err != nil {
		t.Fatalf("%s: text content is not JSON: %v: %s", tool, err, r.text)
	}
	if textJSON, _ := json.Marshal(fromText); !bytes.Equal(textJSON, r.raw) {
		t.Fatalf("%s: text content and structuredContent differ:\n%s\n%s", tool, textJSON, r.raw)
	}
	if err := outputSchema(t, cs, tool).Validate(res.StructuredContent); err != nil {
		t.Fatalf("%s: structuredContent does not match the declared outputSchema: %v\n%s", tool, err, r.raw)
	}
	return r
}

// outputSchemas caches each session's declared output schemas, as a client that validates results would.
var outputSchemas sync.Map // *mcp.ClientSession -> map[string]*jsonschema.Resolved

// outputSchema is the output schema the server declares for tool in tools/list, resolved for validation.
func outputSchema(t testing.TB, cs *mcp.ClientSession, tool string) *jsonschema.Resolved {
	t.Helper()
	if m, ok := outputSchemas.Load(cs); ok {
		return m.(map[string]*jsonschema.Resolved)[tool]
	}
	res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*jsonschema.Resolved{}
	for _, tl := range res.Tools {
		if tl.OutputSchema == nil { // sandbox_read_file declares none (read.go); its results keep these shapes
			m[tl.Name], _ = fsserver.ReadOutputSchema.Resolve(nil)
			continue
		}
		raw, _ := json.Marshal(tl.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("%s: output schema: %v", tl.Name, err)
		}
		if m[tl.Name], err = s.Resolve(nil); err != nil {
			t.Fatalf("%s: output schema: %v", tl.Name, err)
		}
	}
	outputSchemas.Store(cs, m)
	return m[tool]
}

// ok calls a tool that must succeed and decodes its structured result into out.
func ok[T any](t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) T {
	t.Helper()
	r := call(t, cs, tool, args)
	if r.isError {
		t.Fatalf("%s %v: unexpected tool error: %s", tool, args, r.text)
	}
	var out T
	dec := json.NewDecoder(bytes.NewReader(r.raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("%s: structuredContent does not decode into %T: %v: %s", tool, out, err, r.raw)
	}
	return out
}

// fails calls a tool that must fail with a tool error whose message contains every one of want.
func fails(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any, want ...string) string {
	t.Helper()
	r := call(t, cs, tool, args)
	if !r.isError {
		t.Fatalf("%s %v: want a tool error, got %s", tool, args, r.raw)
	}
	for _, w := range want {
		if !strings.Contains(r.text, w) {
			t.Errorf("%s %v: error %q does not contain %q", tool, args, r.text, w)
		}
	}
	return r.text
}

// files writes a tree of files under dir.
func files(t testing.TB, dir string, tree map[string]string) {
	t.Helper()
	for name, content := range tree {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readHost(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// eachTransport runs f once per transport, each with a fresh workspace and a connected client.
func eachTransport(t *testing.T, s setup, f func(t *testing.T, ws string, cs *mcp.ClientSession)) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			ws := filepath.Join(t.TempDir(), "ws")
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			f(t, ws, tr.connect(t, ws, s))
		})
	}
}
