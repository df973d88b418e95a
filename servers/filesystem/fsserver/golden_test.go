package fsserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from what the server does now")

// TestGoldenToolsList pins what clients discover: every tool's name, title, description, input and output
// schemas and annotations, and the server's initialize answer. Both transports must give the same.
func TestGoldenToolsList(t *testing.T) {
	var first []byte
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		var files []txtarFile
		init := cs.InitializeResult()
		files = append(files, txtarFile{"initialize.json", indentJSON(t, map[string]any{
			"serverInfo": init.ServerInfo, "capabilities": init.Capabilities, "instructions": init.Instructions,
		})})
		res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{})
		if err != nil {
			t.Fatal(err)
		}
		wantNames := []string{protocol.ToolReadFile, protocol.ToolWriteFile, protocol.ToolEditFile, protocol.ToolListFiles,
			protocol.ToolSearchFiles, protocol.ToolDeletePath, protocol.ToolMovePath}
		if len(res.Tools) != len(wantNames) {
			t.Errorf("%d tools, want %d", len(res.Tools), len(wantNames))
		}
		byName := map[string]*mcp.Tool{}
		for _, tool := range res.Tools {
			byName[tool.Name] = tool
		}
		for _, name := range wantNames {
			tool := byName[name]
			if tool == nil {
				t.Errorf("tool %s missing", name)
				continue
			}
			if tool.OutputSchema == nil || tool.Annotations == nil || tool.Annotations.OpenWorldHint == nil || *tool.Annotations.OpenWorldHint {
				t.Errorf("%s: needs an output schema and annotations with openWorldHint false", name)
			}
			files = append(files, txtarFile{name + ".json", indentJSON(t, tool)})
		}
		got := formatTxtar("tools/list and initialize of the filesystem server; regenerate with go test ./fsserver -run TestGolden -update", files)
		golden(t, "tools_list.txtar", got)
		if first == nil {
			first = got
		} else if !bytes.Equal(first, got) {
			t.Errorf("the transports disagree on tools/list")
		}
	})
}

// TestGoldenCalls pins the results of a script of tool calls, successes and refusals alike, as a client sees
// them: the text content, which is the structured JSON or the error message. Both transports must give the same.
func TestGoldenCalls(t *testing.T) {
	script := []struct {
		tool string
		args map[string]any
	}{
		{protocol.ToolWriteFile, map[string]any{"path": "src/app.py", "content": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"}},
		{protocol.ToolReadFile, map[string]any{"path": "src/app.py"}},
		{protocol.ToolReadFile, map[string]any{"path": "src/app.py", "offset": 5, "limit": 1}},
		{protocol.ToolReadFile, map[string]any{"path": "src/app.py", "offset": 50}},
		{protocol.ToolReadFile, map[string]any{"path": "src"}},
		{protocol.ToolReadFile, map[string]any{"path": "image.png"}},
		{protocol.ToolReadFile, map[string]any{"path": "../etc/passwd"}},
		{protocol.ToolReadFile, map[string]any{"path": "/etc/passwd"}},
		{protocol.ToolReadFile, map[string]any{"path": "nope.txt"}},
		{protocol.ToolReadFile, map[string]any{"paht": "src/app.py"}},
		{protocol.ToolEditFile, map[string]any{"path": "src/app.py", "old_text": "    return a - b\n", "new_text": "    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"}},
		{protocol.ToolEditFile, map[string]any{"path": "src/app.py", "old_text": "return a + c", "new_text": "x"}},
		{protocol.ToolEditFile, map[string]any{"path": "src/app.py", "old_text": "(a, b)", "new_text": "(x, y)"}},
		{protocol.ToolEditFile, map[string]any{"path": "src/app.py", "old_text": "(a, b)", "new_text": "(x, y)", "replace_all": true}},
		{protocol.ToolListFiles, map[string]any{"depth": 2}},
		{protocol.ToolListFiles, map[string]any{"pattern": "[z-"}},
		{protocol.ToolSearchFiles, map[string]any{"pattern": `def \w+\(x, y\)`, "include": "*.py"}},
		{protocol.ToolSearchFiles, map[string]any{"pattern": `def (`}},
		{protocol.ToolMovePath, map[string]any{"source": "src/app.py", "destination": "lib/app.py"}},
		{protocol.ToolMovePath, map[string]any{"source": "image.png", "destination": "lib/app.py"}},
		{protocol.ToolDeletePath, map[string]any{"path": "lib"}},
		{protocol.ToolDeletePath, map[string]any{"path": "lib", "recursive": true}},
		{protocol.ToolDeletePath, map[string]any{"path": "lib"}},
		{"sandbox_no_such_tool", map[string]any{}},
	}
	var first []byte
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		must(t, os.WriteFile(filepath.Join(ws, "image.png"), []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), 0o644))
		var files []txtarFile
		for i, step := range script {
			args, _ := json.Marshal(step.args)
			name := fmt.Sprintf("%02d %s %s", i+1, step.tool, args)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: step.tool, Arguments: step.args})
			var body string
			switch {
			case err != nil:
				body = "protocol error: " + err.Error()
			case res.IsError:
				body = "tool error: " + res.Content[0].(*mcp.TextContent).Text
			default:
				var v any
				must(t, json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &v))
				body = string(indentJSON(t, v))
			}
			real, _ := filepath.EvalSymlinks(ws)
			body = strings.ReplaceAll(body, real, "$WORKSPACE")
			files = append(files, txtarFile{name, []byte(strings.TrimSuffix(body, "\n") + "\n")})
		}
		got := formatTxtar("a script of tool calls and what a client gets back; regenerate with go test ./fsserver -run TestGolden -update", files)
		golden(t, "calls.txtar", got)
		if first == nil {
			first = got
		} else if !bytes.Equal(first, got) {
			t.Errorf("the transports disagree on the calls")
		}
	})
}

func indentJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// golden compares got with testdata/name, or rewrites the file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		must(t, os.MkdirAll("testdata", 0o755))
		must(t, os.WriteFile(p, got, 0o644))
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./fsserver -run TestGolden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gotFiles, wantFiles := parseTxtar(got), parseTxtar(want)
		for n, w := range wantFiles {
			if g, ok := gotFiles[n]; !ok {
				t.Errorf("%s: section %q is gone", name, n)
			} else if g != w {
				t.Errorf("%s: section %q changed:\n--- want\n%s--- got\n%s", name, n, w, g)
			}
		}
		for n := range gotFiles {
			if _, ok := wantFiles[n]; !ok {
				t.Errorf("%s: new section %q", name, n)
			}
		}
		t.Errorf("%s differs from what the server does now; if the change is intended, run go test ./fsserver -run TestGolden -update", name)
	}
}

// A minimal txtar (the format of golang.org/x/tools/txtar): a comment, then "-- name --" lines each starting a
// file. Written here rather than adding a dependency for thirty lines.
type txtarFile struct {
	name string
	data []byte
}

func formatTxtar(comment string, files []txtarFile) []byte {
	var b bytes.Buffer
	b.WriteString(comment + "\n")
	for _, f := range files {
		fmt.Fprintf(&b, "-- %s --\n", f.name)
		b.Write(f.data)
	}
	return b.Bytes()
}

func parseTxtar(data []byte) map[string]string {
	out := map[string]string{}
	name := ""
	var cur strings.Builder
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --\n") {
			if name != "" {
				out[name] = cur.String()
			}
			name, cur = strings.TrimSuffix(strings.TrimPrefix(line, "-- "), " --\n"), strings.Builder{}
			continue
		}
		cur.WriteString(line)
	}
	if name != "" {
		out[name] = cur.String()
	}
	return out
}
