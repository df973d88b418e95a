package fsserver_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from what the server does now")

// tinyPNG is a 2x1 PNG (a red and a blue pixel), base64-encoded.
const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAE0lEQVR4nGL6z8DAwPAfEAAA//8HDgIB5wu+FwAAAABJRU5ErkJggg=="

// checkpointTime and storeBytes match the fields of a result that change from run to run: the store's size counts
// its manifests, which hold each file's stat key (inode numbers and nanosecond times whose digits vary).
var (
	checkpointTime = regexp.MustCompile(`"created_at": "[^"]*"`)
	storeBytes     = regexp.MustCompile(`"store_bytes": [0-9]+`)
)

const regenerate = "go test ./fsserver -run TestGolden -update"

// TestGoldenToolsList pins what clients discover: every tool's name, title, description, input and output
// schemas and annotations, and the server's initialize answer. Both transports must give the same.
func TestGoldenToolsList(t *testing.T) {
	var first []byte
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		files := []mcptest.TxtarFile{mcptest.InitializeSection(t, cs)}
		res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{})
		if err != nil {
			t.Fatal(err)
		}
		mcptest.RequirePortableTools(t, res.Tools)
		wantNames := []string{protocol.ToolReadFile, protocol.ToolWriteFile, protocol.ToolEditFile, protocol.ToolListFiles,
			protocol.ToolSearchFiles, protocol.ToolDeletePath, protocol.ToolMovePath,
			protocol.ToolCheckpoint, protocol.ToolListCheckpoints, protocol.ToolDiff, protocol.ToolRestore}
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
			if (tool.OutputSchema == nil) != (name == protocol.ToolReadFile) || tool.Annotations == nil || tool.Annotations.OpenWorldHint == nil || *tool.Annotations.OpenWorldHint {
				t.Errorf("%s: needs an output schema (none for sandbox_read_file, whose image results carry no structuredContent) and annotations with openWorldHint false", name)
			}
			files = append(files, mcptest.TxtarFile{Name: name + ".json", Data: mcptest.IndentJSON(t, tool)})
		}
		got := mcptest.FormatTxtar("tools/list and initialize of the filesystem server; regenerate with go test ./fsserver -run TestGolden -update", files)
		mcptest.Golden(t, "tools_list.txtar", got, *update, regenerate)
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
		// Binary files: a 2x1 PNG written from base64, read back as an image and as base64; bad encodings.
		{protocol.ToolWriteFile, map[string]any{"path": "plot.png", "encoding": "base64", "content": tinyPNG}},
		{protocol.ToolReadFile, map[string]any{"path": "plot.png"}},
		{protocol.ToolReadFile, map[string]any{"path": "plot.png", "encoding": "base64"}},
		{protocol.ToolReadFile, map[string]any{"path": "plot.png", "encoding": "base64", "offset": 2}},
		{protocol.ToolReadFile, map[string]any{"path": "plot.png", "encoding": "hex"}},
		{protocol.ToolWriteFile, map[string]any{"path": "blob.bin", "encoding": "base64", "content": "AAEC/w"}},
		{protocol.ToolReadFile, map[string]any{"path": "blob.bin"}},
		{protocol.ToolWriteFile, map[string]any{"path": "blob.bin", "encoding": "base64", "content": "AAEC-_8="}},
		// Checkpoints: take one, change a file, diff, restore, list; an unknown id.
		{protocol.ToolCheckpoint, map[string]any{"label": "after the binary files"}},
		{protocol.ToolWriteFile, map[string]any{"path": "notes.txt", "content": "one\ntwo\n"}},
		{protocol.ToolWriteFile, map[string]any{"path": "image.png", "content": "not an image\n"}},
		{protocol.ToolDiff, map[string]any{"from": "cp-1"}},
		{protocol.ToolRestore, map[string]any{"id": "cp-1"}},
		{protocol.ToolListCheckpoints, map[string]any{}},
		{protocol.ToolRestore, map[string]any{"id": "cp-9"}},
	}
	var first []byte
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		must(t, os.WriteFile(filepath.Join(ws, "image.png"), []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), 0o644))
		var files []mcptest.TxtarFile
		real, _ := filepath.EvalSymlinks(ws)
		for i, step := range script {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: step.tool, Arguments: step.args})
			f := mcptest.CallSection(t, i+1, step.tool, step.args, res, err, nil)
			f.Data = bytes.ReplaceAll(f.Data, []byte(real), []byte("$WORKSPACE"))
			f.Data = checkpointTime.ReplaceAllLiteral(f.Data, []byte(`"created_at": "$TIME"`))
			f.Data = storeBytes.ReplaceAllLiteral(f.Data, []byte(`"store_bytes": "$BYTES"`))
			files = append(files, f)
		}
		got := mcptest.FormatTxtar("a script of tool calls and what a client gets back; regenerate with go test ./fsserver -run TestGolden -update", files)
		mcptest.Golden(t, "calls.txtar", got, *update, regenerate)
		if first == nil {
			first = got
		} else if !bytes.Equal(first, got) {
			t.Errorf("the transports disagree on the calls")
		}
	})
}
