package fsserver

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxMatchText caps the text of one matching line in a result (minified files have megabyte lines).
const maxMatchText = 500

func searchTool(g *pathguard.Guard, o Options) *mcp.Tool {
	return &mcp.Tool{
		Name:  protocol.ToolSearchFiles,
		Title: "Search files",
		Description: fmt.Sprintf("Search text files for lines matching a regular expression (RE2 syntax, as in Go and "+
			"ripgrep: no backreferences or lookaround; (?i) makes it case-insensitive). path is a folder (searched "+
			"recursively) or a file; default the whole workspace. include is a glob on file names, e.g. *.py. Returns "+
			"matches as path, 1-based line and the line's text (cut at %d bytes), in path order; max_results defaults "+
			"to %d, at most %d; truncated=true says there were more. Binary files, files over %s, symlinks and "+
			".git folders (unless path points into one) are skipped.",
			maxMatchText, o.DefaultSearchResults, o.MaxSearchResults, sizeText(g.Options().MaxReadBytes)),
		Annotations:  annRead("Search files"),
		OutputSchema: searchOutputSchema,
	}
}

// searchBufPool holds file buffers between searches; most source files fit the first one a search grows.
var searchBufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (s *Filesystem) search(ctx context.Context, in protocol.SearchFilesInput) (protocol.SearchFilesOutput, error) {
	out := protocol.SearchFilesOutput{Matches: []protocol.SearchMatch{}}
	if in.Pattern == "" {
		return out, errors.New("pattern is required: give an RE2 regular expression, e.g. func \\w+\\(")
	}
	re, err := regexp.Compile(in.Pattern)
	if err != nil {
		return out, fmt.Errorf("pattern is not a valid RE2 regular expression: %v (RE2 has no backreferences or lookaround; escape literal characters such as ( [ . with \\)", err)
	}
	if in.MaxResults < 0 {
		return out, fmt.Errorf("max_results %d must not be negative: use 1 to %d (default %d)", in.MaxResults, s.opts.MaxSearchResults, s.opts.DefaultSearchResults)
	}
	limit := min(cmp.Or(in.MaxResults, s.opts.DefaultSearchResults), s.opts.MaxSearchResults)
	if err := checkGlob("include", in.Include); err != nil {
		return out, err
	}
	rel, fi, err := s.g.Stat(in.Path)
	if err != nil {
		return out, err
	}
	// The whole-file prefilter sees ^ and $ at every line break, as the per-line match does. \A and \z mean
	// something else on a whole file, so with them there is no prefilter.
	var pre *regexp.Regexp
	if !strings.Contains(in.Pattern, `\A`) && !strings.Contains(in.Pattern, `\z`) {
		pre, _ = regexp.Compile("(?m:" + in.Pattern + ")") // nil (no prefilter) should it not compile
	}
	maxBytes := s.g.Options().MaxReadBytes
	buf := searchBufPool.Get().(*bytes.Buffer)
	defer searchBufPool.Put(buf)
	m := matcher{re: re, pre: pre, maxBytes: maxBytes, buf: buf}

	if !fi.IsDir() {
		// One file, named by its path (a symlink to a file inside is followed, as read follows it). FIFOs,
		// devices and binary files give no matches.
		if !matchGlob(in.Include, path.Base(rel)) || fi.Size() > maxBytes {
			return out, nil
		}
		_, f, _, err := s.g.OpenFile(rel)
		if err != nil {
			return out, nil
		}
		defer f.Close()
		out.Truncated, _ = m.file(f, func() string { return rel }, limit, &out.Matches)
		return out, nil
	}
	// The walk opens each folder and file from its parent's handle: linear in the entries it reads, whatever the
	// depth, within the walk caps.
	err = s.g.Walk(ctx, rel, pathguard.WalkOptions{SkipUnreadable: true}, func(e *pathguard.Entry) error {
		if e.IsDir() {
			if e.Name == ".git" && !inGit(rel) {
				return fs.SkipDir
			}
			return nil
		}
		// Regular files only: symlinks are not followed (their targets are searched where they live), and FIFOs
		// or devices are never opened.
		if !e.Type.IsRegular() || !matchGlob(in.Include, e.Name) || e.Size > maxBytes {
			return nil
		}
		f, err := e.Open()
		if err != nil {
			return nil // vanished or changed since it was listed: skipped
		}
		defer f.Close()
		full, _ := m.file(f, e.Path, limit-len(out.Matches), &out.Matches)
		if full {
			out.Truncated = true
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return protocol.SearchFilesOutput{}, walkError(err, "search", "search a folder further down, or use a command")
	}
	return out, nil
}

// matcher searches files for one search.
type matcher struct {
	re, pre  *regexp.Regexp
	maxBytes int64
	buf      *bytes.Buffer
}

// file appends the matches in f to matches, at most room of them, and reports whether there was another match past
// room. name gives the file's path, asked for only when it matches. Binary files, and files that grew past maxBytes
// since they were listed, are skipped.
func (m matcher) file(f io.Reader, name func() string, room int, matches *[]protocol.SearchMatch) (bool, error) {
	m.buf.Reset()
	if _, err := io.Copy(m.buf, io.LimitReader(f, m.maxBytes+1)); err != nil || int64(m.buf.Len()) > m.maxBytes {
		return false, err
	}
	data := m.buf.Bytes()
	if binaryReason(data, true) != "" {
		return false, nil
	}
	// Most files do not match at all: one pass over the whole file rejects them before splitting lines. (Lines
	// ending in \r are matched without it, which the prefilter's $ would not see.)
	if m.pre != nil && bytes.IndexByte(data, '\r') < 0 && !m.pre.Match(data) {
		return false, nil
	}
	p := ""
	for line := 1; len(data) > 0; line++ {
		var text []byte
		text, data, _ = bytes.Cut(data, []byte{'\n'})
		text = bytes.TrimSuffix(text, []byte{'\r'})
		if !m.re.Match(text) {
			continue
		}
		if room == 0 {
			return true, nil
		}
		if p == "" {
			p = name()
		}
		*matches = append(*matches, protocol.SearchMatch{Path: p, Line: line, Text: clip(string(text), maxMatchText)})
		room--
	}
	return false, nil
}
