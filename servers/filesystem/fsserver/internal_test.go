package fsserver

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPanicBecomesToolError: a bug that panics in a tool costs that one call, not the server.
func TestPanicBecomesToolError(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	type in struct {
		N int `json:"n"`
	}
	type out struct {
		N int `json:"n"`
	}
	mcpserve.AddTool(srv, slog.New(slog.DiscardHandler), &mcp.Tool{Name: "boom"}, withHint(func(_ context.Context, i in) (out, error) {
		if i.N == 0 {
			panic("division by zero")
		}
		return out{N: 10 / i.N}, nil
	}))
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "boom", Arguments: map[string]any{"n": 0}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "internal error") {
		t.Fatalf("panic: %v %+v", err, res)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "boom", Arguments: map[string]any{"n": 5}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != `{"n":2}` {
		t.Fatalf("after the panic: %v %+v", err, res)
	}
}

// FuzzEdit checks the edit machinery on arbitrary text: the new content is exactly the replacement, the diff applies
// to the old content to give the new one and is the one the simple, unbounded reference implementation
// gives, and so is the hint for a failed edit (within the bounds that make the new ones bounded).
func FuzzEdit(f *testing.F) {
	f.Add("a\nb\nc\n", "b", "B", true)
	f.Add("x x\ny", "x", "", true)
	f.Add("no newline", "newline", "line\n", false)
	f.Add("\n\n\n", "\n", "\r\n", true)
	f.Add("a\r\nb\r\n", "a\nb", "c", false)
	f.Add("one\ntwo\nthree\nfour\n", "tw0\nthree", "x", false)
	f.Fuzz(func(t *testing.T, content, old, new string, all bool) {
		hint := nearest([]byte(content), old)
		if comparableHint(content, old) {
			if want := refNearest(content, old); hint != want {
				t.Fatalf("nearest(%q, %q):\n got %q\nwant %q", content, old, hint, want)
			}
		}
		if old == "" || old == new {
			return
		}
		n := strings.Count(content, old)
		if n == 0 {
			return
		}
		_ = matchLines([]byte(content), []byte(old), n)
		if n > 1 && !all {
			return // the tool refuses it
		}
		size := len(content) + n*(len(new)-len(old))
		updated, diff := replaceAndDiff("f", []byte(content), []byte(old), []byte(new), n, size)
		want := strings.ReplaceAll(content, old, new)
		if string(updated) != want || len(updated) != size {
			t.Fatalf("replaced %q (%d bytes, computed %d), want %q", updated, len(updated), size, want)
		}
		var idx []int
		for at := 0; len(idx) < n; {
			i := strings.Index(content[at:], old)
			idx = append(idx, at+i)
			at += i + len(old)
		}
		_, refDiff := refReplaceAndDiff("f", content, old, new, idx)
		if strings.Contains(diff, diffCut) {
			if len(refDiff) < maxDiffBytes-1024 {
				t.Fatalf("the diff was cut, the reference's is %d bytes", len(refDiff))
			}
			return
		}
		if diff != refDiff {
			t.Fatalf("diff differs from the reference:\n got %q\nwant %q", diff, refDiff)
		}
		patched, err := applyUnified(content, diff)
		if err != nil {
			t.Fatalf("%v\ndiff:\n%s", err, diff)
		}
		if patched != want {
			t.Fatalf("diff applied gives %q, want %q\ndiff:\n%s", patched, want, diff)
		}
	})
}

// comparableHint reports whether the bounded hint must equal the unbounded one: old_text has at most
// maxNearestWant lines and no line of either side is longer than maxSimilarScan (past which similarity looks at
// heads and tails only).
func comparableHint(content, old string) bool {
	if strings.Count(old, "\n") >= maxNearestWant {
		return false
	}
	for _, s := range []string{content, old} {
		for _, l := range strings.Split(s, "\n") {
			if len(l) > maxSimilarScan {
				return false
			}
		}
	}
	return true
}

// applyUnified applies a unified diff of one file to old, strictly: every context and removed line must match.
func applyUnified(old, diff string) (string, error) {
	src := splitLines(old)
	lines := strings.SplitAfter(diff, "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "--- ") || !strings.HasPrefix(lines[1], "+++ ") {
		return "", fmt.Errorf("no header")
	}
	var out []string
	pos := 0 // next line of src to copy
	for i := 2; i < len(lines) && lines[i] != ""; {
		h := lines[i]
		var a, b string
		if _, err := fmt.Sscanf(h, "@@ -%s +%s @@", &a, &b); err != nil {
			return "", fmt.Errorf("bad hunk header %q", h)
		}
		start, _ := strconv.Atoi(strings.Split(a, ",")[0])
		count := 1
		if p := strings.Split(a, ","); len(p) == 2 {
			count, _ = strconv.Atoi(p[1])
		}
		from := start - 1
		if count == 0 {
			from = start // an empty range names the line before it
		}
		if from < pos || from > len(src) {
			return "", fmt.Errorf("hunk %q out of order", h)
		}
		out = append(out, src[pos:from]...)
		pos = from
		i++
		for i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "@@") {
			l := lines[i]
			i++
			noEOL := i < len(lines) && strings.HasPrefix(lines[i], `\ No newline`)
			text := l[1:]
			if noEOL {
				text = strings.TrimSuffix(text, "\n")
				i++
			}
			switch l[0] {
			case ' ', '-':
				if pos >= len(src) || src[pos] != text {
					return "", fmt.Errorf("line %d: diff has %q, file has %q", pos+1, text, at(src, pos))
				}
				if l[0] == ' ' {
					out = append(out, text)
				}
				pos++
			case '+':
				out = append(out, text)
			default:
				return "", fmt.Errorf("bad diff line %q", l)
			}
		}
	}
	out = append(out, src[pos:]...)
	return strings.Join(out, ""), nil
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(end of file)"
}

// FuzzRead compares read with a plain model of the contract on arbitrary text: lines from offset, at most limit
// of them and at most the byte cap, total_lines, truncated, and the error for an offset past the end.
func FuzzRead(f *testing.F) {
	f.Add("a\nb\nc\n", 0, 0, 100)
	f.Add("a\nb\nc", 2, 1, 100)
	f.Add("", 1, 0, 10)
	f.Add("\n\n", 3, 0, 10)
	f.Add(strings.Repeat("é", 40000)+"\nx\n", 1, 1, 70000) // a line longer than the 64 KiB reader buffer
	f.Add(strings.Repeat("long line\n", 30000), 29990, 20, 1000)
	dir := f.TempDir()
	g, err := pathguardOpen(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, content string, offset, limit, maxBytes int) {
		if strings.IndexByte(content, 0) >= 0 || !utf8Valid(content) || offset < 0 || limit < 0 || maxBytes < 4 || maxBytes > 1<<20 {
			return
		}
		s := &Filesystem{g: g, opts: Options{MaxReadLines: 50, MaxReadContentBytes: maxBytes}.withDefaults()}
		if err := writeFile(dir, "f.txt", content); err != nil {
			t.Fatal(err)
		}
		got, err := readText(s, readInput("f.txt", offset, limit))

		lines := splitLines(content)
		o, l := max(offset, 1), limit
		if l == 0 || l > 50 {
			l = 50
		}
		if o > 1 && o > len(lines) {
			if err == nil || !strings.Contains(err.Error(), "past the end") {
				t.Fatalf("offset %d of %d lines: got %+v, %v", o, len(lines), got, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		var want strings.Builder
		end, cut := 0, false
		for i := o; i <= len(lines) && i < o+l; i++ {
			if want.Len()+len(lines[i-1]) > maxBytes {
				cut = true
				if end == 0 {
					want.Write(cutUTF8([]byte(lines[i-1]), maxBytes))
					end = i
				}
				break
			}
			want.WriteString(lines[i-1])
			end = i
		}
		if got.Content != want.String() || got.StartLine != o || got.EndLine != end || got.TotalLines != len(lines) || got.Truncated != (cut || end < len(lines)) {
			t.Fatalf("offset %d limit %d cap %d:\n got %+v\nwant content %q end %d total %d cut %v", offset, limit, maxBytes, got, want.String(), end, len(lines), cut)
		}
		// A note comes with exactly the reads that cut their first line.
		if firstCut := cut && end == o && len(lines[o-1]) > maxBytes; (got.Note != "") != firstCut {
			t.Fatalf("offset %d cap %d: note %q, want one: %v", offset, maxBytes, got.Note, firstCut)
		}
	})
}
