package mcptest

// Golden files of what a server says to its clients (its tools/list, the results of a scripted sequence of calls),
// kept as txtar archives in the test's testdata folder, so a change to a tool contract shows as a diff in review.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TxtarFile is one section of a golden archive.
type TxtarFile struct {
	Name string
	Data []byte
}

// FormatTxtar writes a comment and then each file after a "-- name --" line: the format of
// golang.org/x/tools/txtar, written here rather than adding a dependency for thirty lines.
func FormatTxtar(comment string, files []TxtarFile) []byte {
	var b bytes.Buffer
	b.WriteString(comment + "\n")
	for _, f := range files {
		fmt.Fprintf(&b, "-- %s --\n", f.Name)
		b.Write(f.Data)
	}
	return b.Bytes()
}

// ParseTxtar reads the sections of an archive FormatTxtar wrote, by name.
func ParseTxtar(data []byte) map[string]string {
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

// Golden compares got with testdata/name, or rewrites that file when update is set (the test's -update flag).
// regenerate is the command that rewrites it, for the failure message. A mismatch names each section that
// changed, appeared or went.
func Golden(t testing.TB, name string, got []byte, update bool, regenerate string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run %s to create it)", err, regenerate)
	}
	if bytes.Equal(got, want) {
		return
	}
	gotFiles, wantFiles := ParseTxtar(got), ParseTxtar(want)
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
	t.Errorf("%s differs from what the server does now; if the change is intended, run %s", name, regenerate)
}

// IndentJSON is v as indented JSON with a final newline, the form golden sections keep.
func IndentJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// InitializeSection is the server's initialize answer as a golden section: what a client learns before listing
// tools.
func InitializeSection(t testing.TB, cs *mcp.ClientSession) TxtarFile {
	t.Helper()
	init := cs.InitializeResult()
	return TxtarFile{"initialize.json", IndentJSON(t, map[string]any{
		"serverInfo": init.ServerInfo, "capabilities": init.Capabilities, "instructions": init.Instructions,
	})}
}

// CallSection is one call's outcome as a client sees it, named after the tool and its arguments: "protocol error:"
// and the error, "tool error:" and the message, or the structured result as indented JSON. edit, when set, may
// rewrite a decoded result (to blank out what varies from run to run, such as a duration) before it is written.
func CallSection(t testing.TB, n int, tool string, args map[string]any, res *mcp.CallToolResult, err error, edit func(map[string]any)) TxtarFile {
	t.Helper()
	a, _ := json.Marshal(args)
	var body string
	switch {
	case err != nil:
		// The JSON-RPC error as the server sent it: the go-sdk client wraps it in words that differ by transport
		// and era (under 2026-07-28 an invalid-params error also comes with HTTP 400).
		var jerr *jsonrpc.Error
		if errors.As(err, &jerr) {
			body = fmt.Sprintf("protocol error %d: %s", jerr.Code, jerr.Message)
		} else {
			body = "protocol error: " + err.Error()
		}
	case res.IsError:
		body = "tool error: " + res.Content[0].(*mcp.TextContent).Text
	default:
		var v any
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &v); err != nil {
			t.Fatalf("%s: result text is not JSON: %v", tool, err)
		}
		if m, ok := v.(map[string]any); ok && edit != nil {
			edit(m)
		}
		body = string(IndentJSON(t, v))
	}
	return TxtarFile{fmt.Sprintf("%02d %s %s", n, tool, a), []byte(strings.TrimSuffix(body, "\n") + "\n")}
}
