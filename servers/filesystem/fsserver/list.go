package fsserver

import (
	"context"
	"fmt"
	"io/fs"
	"path"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func listTool(o Options) *mcp.Tool {
	return &mcp.Tool{
		Name:  protocol.ToolListFiles,
		Title: "List files",
		Description: fmt.Sprintf("List a folder of the workspace (default: the workspace itself). depth 1 (the default) "+
			"lists the folder's own entries; larger depths descend into subfolders, up to %d. pattern is a glob on "+
			"entry names (*, ?, [abc]; e.g. *.go), matched in every folder descended into. Entries are in tree order "+
			"(each folder's entries by name, a folder's contents right after it) with their type (file, dir, symlink, "+
			"other) and size in bytes; at most %d, truncated=true says there were more. Symlinked folders are listed "+
			"but not descended into, and .git folders are not descended into unless listed directly.",
			o.MaxListDepth, o.MaxListEntries),
		Annotations:  annRead("List files"),
		OutputSchema: listOutputSchema,
	}
}

func (s *Filesystem) list(ctx context.Context, in protocol.ListFilesInput) (protocol.ListFilesOutput, error) {
	var out protocol.ListFilesOutput
	if in.Depth < 0 {
		return out, fmt.Errorf("depth %d must not be negative: use 1 to %d (default 1)", in.Depth, s.opts.MaxListDepth)
	}
	depth := min(max(in.Depth, 1), s.opts.MaxListDepth)
	if err := checkGlob("pattern", in.Pattern); err != nil {
		return out, err
	}
	rel, fi, err := s.g.Stat(in.Path)
	if err != nil {
		return out, err
	}
	out.Path = rel
	out.Entries = []protocol.ListEntry{}
	if !fi.IsDir() {
		// A file lists as itself: more useful than an error when a model lists a path to see whether it exists.
		if matchGlob(in.Pattern, path.Base(rel)) {
			out.Entries = append(out.Entries, protocol.ListEntry{Path: rel, Type: entryType(fi.Mode()), Size: entrySize(fi)})
		}
		return out, nil
	}
	// The walk opens each folder from its parent's handle: linear in the entries it reads, whatever the depth.
	err = s.g.Walk(ctx, rel, pathguard.WalkOptions{SkipUnreadable: true}, func(e *pathguard.Entry) error {
		if matchGlob(in.Pattern, e.Name) {
			if len(out.Entries) == s.opts.MaxListEntries {
				out.Truncated = true
				return fs.SkipAll
			}
			out.Entries = append(out.Entries, protocol.ListEntry{Path: e.Path(), Type: entryType(e.Type), Size: e.Size})
		}
		// e.IsDir is false for a symlink, so a symlinked folder is never descended into.
		if e.IsDir() && (e.Depth >= depth || (e.Name == ".git" && !inGit(rel))) {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return out, walkError(err, "list", "list a folder further down or with a smaller depth, or use a command")
	}
	return out, nil
}

func entryType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return protocol.EntryFile
	case m.IsDir():
		return protocol.EntryDir
	case m&fs.ModeSymlink != 0:
		return protocol.EntrySymlink
	}
	return protocol.EntryOther
}

func entrySize(fi fs.FileInfo) int64 {
	if fi.Mode().IsRegular() {
		return fi.Size()
	}
	return 0
}

// inGit reports whether the workspace-relative path rel is a .git folder or inside one: what is asked for there
// explicitly is not hidden.
func inGit(rel string) bool {
	for d := rel; d != "." && d != "/"; d = path.Dir(d) {
		if path.Base(d) == ".git" {
			return true
		}
	}
	return false
}

// checkGlob refuses a malformed glob with the syntax that is allowed.
func checkGlob(field, pattern string) error {
	if _, err := path.Match(pattern, ""); err != nil {
		return fmt.Errorf("%s %q is not a valid glob (%v): use *, ? and [abc] or [a-z] on file names, e.g. *.go", field, pattern, err)
	}
	return nil
}

// matchGlob reports whether name matches pattern; an empty pattern matches every name.
func matchGlob(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok || pattern == ""
}
