package fsserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
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

// errSearchFull stops a walk when enough matches are found.
var errSearchFull = errors.New("search full")

// searchBufPool holds file buffers between searches; most source files fit the first one a search grows.
var searchBufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (s *server) search(ctx context.Context, in protocol.SearchFilesInput) (protocol.SearchFilesOutput, error) {
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
	limit := in.MaxResults
	if limit == 0 {
		limit = s.opts.DefaultSearchResults
	}
	limit = min(limit, s.opts.MaxSearchResults)
	if err := checkGlob("include", in.Include); err != nil {
		return out, err
	}
	rel, _, err := s.g.Stat(in.Path)
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
	fsys := s.g.FS()
	buf := searchBufPool.Get().(*bytes.Buffer)
	defer searchBufPool.Put(buf)

	err = fs.WalkDir(fsys, rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == rel {
				return err
			}
			return nil // unreadable or vanished entries are skipped, not fatal
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != rel && !inGit(rel) {
				return fs.SkipDir
			}
			return nil
		}
		// Regular files only: symlinks are not followed (their targets are searched where they live), and FIFOs
		// or devices are never opened.
		if !d.Type().IsRegular() || (in.Include != "" && !matchGlob(in.Include, d.Name())) {
			return nil
		}
		// Entries of a folder read inside an os.Root come with their lstat already done: no extra system call.
		if info, err := d.Info(); err != nil || info.Size() > maxBytes {
			return nil
		}
		full, err := s.searchFile(fsys, p, re, pre, maxBytes, limit-len(out.Matches), buf, &out.Matches)
		if err != nil {
			return nil
		}
		if full {
			out.Truncated = true
			return errSearchFull
		}
		return nil
	})
	if err != nil && err != errSearchFull {
		return protocol.SearchFilesOutput{}, err
	}
	return out, nil
}

// searchFile appends the matches of re in the file p to matches, at most room of them, and reports whether there
// was another match past room. Binary files, and files that grew past maxBytes since they were listed, are skipped.
func (s *server) searchFile(fsys fs.FS, p string, re, pre *regexp.Regexp, maxBytes int64, room int, buf *bytes.Buffer, matches *[]protocol.SearchMatch) (bool, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close() // the guard's Open has checked that it is a regular file, on the open descriptor itself
	buf.Reset()
	if _, err := io.Copy(buf, io.LimitReader(f, maxBytes+1)); err != nil || int64(buf.Len()) > maxBytes {
		return false, err
	}
	data := buf.Bytes()
	if binaryReason(data, true) != "" {
		return false, nil
	}
	// Most files do not match at all: one pass over the whole file rejects them before splitting lines. (Lines
	// ending in \r are matched without it, which the prefilter's $ would not see.)
	if pre != nil && bytes.IndexByte(data, '\r') < 0 && !pre.Match(data) {
		return false, nil
	}
	for line := 1; len(data) > 0; line++ {
		text := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			text, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		text = bytes.TrimSuffix(text, []byte{'\r'})
		if !re.Match(text) {
			continue
		}
		if room == 0 {
			return true, nil
		}
		*matches = append(*matches, protocol.SearchMatch{Path: p, Line: line, Text: clip(string(text), maxMatchText)})
		room--
	}
	return false, nil
}
