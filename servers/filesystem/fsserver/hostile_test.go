//go:build unix

package fsserver_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFIFO puts a named pipe with no writer in the workspace: opening it for reading would block forever. Read,
// edit and write refuse it, list shows it as "other", search skips it, and none of them hangs.
func TestFIFO(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		must(t, syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644))
		files(t, ws, map[string]string{"a.txt": "needle\n"})
		done := make(chan struct{})
		go func() {
			defer close(done)
			fails(t, cs, protocol.ToolReadFile, map[string]any{"path": "pipe"}, "FIFO")
			fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "pipe", "old_text": "a", "new_text": "b"}, "FIFO")
			fails(t, cs, protocol.ToolWriteFile, map[string]any{"path": "pipe", "content": "x"}, "FIFO")
			got := ok[listOut](t, cs, protocol.ToolListFiles, map[string]any{})
			if want := []string{"a.txt:file", "pipe:other"}; strings.Join(names(got), " ") != strings.Join(want, " ") {
				t.Errorf("list: %v", names(got))
			}
			got = ok[listOut](t, cs, protocol.ToolListFiles, map[string]any{"path": "pipe"})
			if len(got.Entries) != 1 || got.Entries[0].Type != "other" {
				t.Errorf("list pipe: %+v", got)
			}
			s := ok[protocol.SearchFilesOutput](t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": "needle"})
			if len(s.Matches) != 1 {
				t.Errorf("search: %+v", s)
			}
			ok[protocol.SearchFilesOutput](t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": "x", "path": "pipe"})
			ok[protocol.DeletePathOutput](t, cs, protocol.ToolDeletePath, map[string]any{"path": "pipe"})
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("a tool hung on the FIFO")
		}
	})
}

// TestConcurrentReadersWriters runs 32 clients at once on one file over HTTP, half writing whole versions, half
// reading: every read must see exactly one whole version, never a mix or a torn write.
func TestConcurrentReadersWriters(t *testing.T) {
	ws := t.TempDir()
	_, run := startHTTP(t, ws, setup{}, mcpserve.Config{})
	version := func(writer, n int) string {
		// 100 lines of one letter (about 31 KB, one read's worth), the version in every line: a torn read would mix
		// two of them.
		tag := fmt.Sprintf("w%02d-n%03d", writer, n)
		var b strings.Builder
		for i := 0; i < 100; i++ {
			b.WriteString(tag + " " + strings.Repeat(string(rune('a'+writer%26)), 300) + "\n")
		}
		return b.String()
	}
	first := connectURL(t, run.URL)
	ok[protocol.WriteFileOutput](t, first, protocol.ToolWriteFile, map[string]any{"path": "shared.txt", "content": version(0, 0)})

	const clients, rounds = 32, 15
	var wg sync.WaitGroup
	errs := make(chan string, clients*rounds)
	for c := 0; c < clients; c++ {
		cs := connectURL(t, run.URL)
		wg.Add(1)
		go func(c int, cs *mcp.ClientSession) {
			defer wg.Done()
			for n := 1; n <= rounds; n++ {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				if c%2 == 0 {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: protocol.ToolWriteFile, Arguments: map[string]any{"path": "shared.txt", "content": version(c, n)}})
					if err != nil || res.IsError {
						errs <- fmt.Sprintf("write: %v %v", err, res)
					}
				} else {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: protocol.ToolReadFile, Arguments: map[string]any{"path": "shared.txt"}})
					if err != nil || res.IsError {
						errs <- fmt.Sprintf("read: %v %v", err, res)
					} else {
						content := res.StructuredContent.(map[string]any)["content"].(string)
						tag, _, _ := strings.Cut(content, " ")
						var w, v int
						if _, err := fmt.Sscanf(tag, "w%02d-n%03d", &w, &v); err != nil || content != version(w, v) {
							errs <- fmt.Sprintf("read saw a torn or mixed file (%d bytes, starts %.20q)", len(content), content)
						}
					}
				}
				cancel()
			}
		}(c, cs)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	leftovers, _ := filepath.Glob(filepath.Join(ws, ".goalbox-tmp-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}
