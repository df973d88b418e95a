package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// outputIDPattern finds the random ID in a full output's URI: a session's (16 characters) or a stateless
// request's handle (26).
var outputIDPattern = regexp.MustCompile(`^(goalbox-output://)(?:[a-z2-7]{16}|[a-z2-7]{26})(/)`)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from what the server does now")

const regenerate = "go test ./servers/executor -run TestGolden -update"

// goldenDeny and goldenOutputCap are the golden server's configuration, given alike to both transports.
const (
	goldenDeny      = `^rm\b`
	goldenOutputCap = 1024
)

// goldenTransports connect a client to an executor over the local backend: in-process over loopback HTTP, as the
// agent embeds it, and as its own process on stdio, as an MCP client launches it; each in both protocol eras
// (2025-11-25 with a session, 2026-07-28 without), which must all give the same archive.
var goldenTransports = func() []goldenTransport {
	var ts []goldenTransport
	for _, v := range mcptest.Eras {
		ts = append(ts,
			goldenTransport{"http/" + v, func(t *testing.T, ws string) *mcp.ClientSession { return goldenHTTP(t, ws, v) }},
			goldenTransport{"stdio/" + v, func(t *testing.T, ws string) *mcp.ClientSession { return goldenStdio(t, ws, v) }})
	}
	return ts
}()

type goldenTransport struct {
	name    string
	connect func(t *testing.T, ws string) *mcp.ClientSession
}

func goldenHTTP(t *testing.T, ws string, version string) *mcp.ClientSession {
	g, err := pathguard.Open(ws, pathguard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	b, err := local.New(local.Config{Workspace: g.Dir(), CacheDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	policy, err := execserver.NewPolicy(nil, []string{goldenDeny})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := execserver.New(execserver.Config{OutputCap: goldenOutputCap, Policy: policy}, b, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	return mcptest.ServeVersion(t, ex.Server(), ex.Health, version)
}

func goldenStdio(t *testing.T, ws string, version string) *mcp.ClientSession {
	cmd := executor(t, nil, "-stdio", "-workspace", ws, "-cache-dir", t.TempDir(), "-log-level", "error",
		"-deny", goldenDeny, "-output-cap", "1024")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "golden", Version: "0"}, nil).Connect(context.Background(),
		&mcp.CommandTransport{Command: cmd}, mcptest.ClientOptions(version))
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("stdio: asked for protocol %s, got %s", version, got)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// eachGoldenTransport runs f once per transport with a fresh workspace, and checks that all transports produced
// the same archive.
func eachGoldenTransport(t *testing.T, f func(t *testing.T, ws string, cs *mcp.ClientSession) []byte) {
	var first []byte
	for _, tr := range goldenTransports {
		t.Run(tr.name, func(t *testing.T) {
			ws := filepath.Join(t.TempDir(), "ws")
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			got := f(t, ws, tr.connect(t, ws))
			if first == nil {
				first = got
			} else if !bytes.Equal(first, got) {
				t.Errorf("the transports disagree")
			}
		})
	}
}

// TestGoldenToolsList pins what clients discover: the tool's name, title, description, input and output schemas
// and annotations, and the server's initialize answer.
func TestGoldenToolsList(t *testing.T) {
	eachGoldenTransport(t, func(t *testing.T, ws string, cs *mcp.ClientSession) []byte {
		files := []mcptest.TxtarFile{mcptest.InitializeSection(t, cs)}
		res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{})
		if err != nil {
			t.Fatal(err)
		}
		mcptest.RequirePortableTools(t, res.Tools)
		want := []string{protocol.ToolListProcesses, protocol.ToolReadOutput, protocol.ToolReadProcessOutput, protocol.ToolRunCommand, protocol.ToolStartProcess,
			protocol.ToolStopProcess, protocol.ToolWriteProcessInput}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if !slices.Equal(names, want) {
			t.Errorf("tools: %v, want %v", names, want)
		}
		for _, tool := range res.Tools {
			files = append(files, mcptest.TxtarFile{Name: tool.Name + ".json", Data: mcptest.IndentJSON(t, tool)})
		}
		got := mcptest.FormatTxtar("tools/list and initialize of the executor; regenerate with "+regenerate, files)
		mcptest.Golden(t, "tools_list.txtar", got, *update, regenerate)
		return got
	})
}

var durationPattern = regexp.MustCompile(`"duration_ms":\d+`)

// TestGoldenCalls pins the results of a script of commands, successes and refusals alike, as a client sees them:
// the structured result (its duration blanked) or the error message.
func TestGoldenCalls(t *testing.T) {
	script := []map[string]any{
		{"command": "echo hello"},
		{"command": "echo out; echo err >&2; exit 3"},
		{"command": "mkdir -p sub/dir && cd sub && pwd"},
		{"command": "pwd", "cwd": "sub/dir"},
		{"command": "pwd", "cwd": protocol.DefaultRoot + "/sub"},
		{"command": "cat; echo", "stdin": "from stdin"},
		{"command": "i=0; while [ $i -lt 300 ]; do echo line $i; i=$((i+1)); done"},
		{"command": "sleep 30", "timeout_seconds": 1},
		{"command": "rm -rf sub"},
		{"command": "  "},
		{"command": "pwd", "cwd": "nope"},
		{"command": "pwd", "cwd": "../etc"},
		{"command": "echo", "timeout_seconds": 100000},
		{"cmd": "echo"},
		{},
	}
	eachGoldenTransport(t, func(t *testing.T, ws string, cs *mcp.ClientSession) []byte {
		real, _ := filepath.EvalSymlinks(ws)
		var files []mcptest.TxtarFile
		for i, args := range script {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolRunCommand, Arguments: args})
			f := mcptest.CallSection(t, i+1, protocol.ToolRunCommand, args, res, err, func(out map[string]any) {
				if _, ok := out["duration_ms"]; ok {
					out["duration_ms"] = "(varies)"
				}
				for _, k := range []string{"stdout_resource", "stderr_resource"} {
					if uri, ok := out[k].(string); ok { // the output's ID is random
						out[k] = outputIDPattern.ReplaceAllString(uri, "$1(random)$2")
					}
				}
			})
			f.Data = bytes.ReplaceAll(f.Data, []byte(real), []byte("$WORKSPACE"))
			files = append(files, f)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sandbox_no_such_tool", Arguments: map[string]any{}})
		files = append(files, mcptest.CallSection(t, len(script)+1, "sandbox_no_such_tool", map[string]any{}, res, err, nil))
		// The text itself, as a model reads it: the facts on the first line, each stream on a line of its own after
		// them (what survives a client's cut of a long result: docs/clients.md).
		args := map[string]any{"command": "echo out; echo err >&2; exit 3", "wait_for_previous": true}
		res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolRunCommand, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%v %+v", err, res)
		}
		text := durationPattern.ReplaceAllString(res.Content[0].(*mcp.TextContent).Text, `"duration_ms":(varies)`)
		a, _ := json.Marshal(args)
		files = append(files, mcptest.TxtarFile{Name: fmt.Sprintf("%02d %s %s: the text", len(script)+2, protocol.ToolRunCommand, a), Data: []byte(text + "\n")})
		got := mcptest.FormatTxtar("a script of commands and what a client gets back; regenerate with "+regenerate, files)
		mcptest.Golden(t, "calls.txtar", got, *update, regenerate)
		return got
	})
}
