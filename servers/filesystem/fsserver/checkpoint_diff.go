package fsserver

// sandbox_diff: the changed paths between two states (a checkpoint and the workspace now, or two checkpoints) and
// a unified diff of the changed text files, each rendered by the edit's diffWriter (diff.go) from the regions
// checkpoint_linediff.go finds.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// Caps of one diff result: the text, and the paths listed. The text's cap is the read cap's default (32 KiB), a
// result every coding-agent client passes its model whole (docs/clients.md).
const (
	maxCheckpointDiffBytes = DefaultMaxReadContentBytes
	maxDiffFiles           = 1000
)

// scope is the paths an operation is limited to: cleaned workspace paths, "." for everything.
type scope []string

func (sc scope) has(p string) bool {
	return slices.ContainsFunc(sc, func(s string) bool { return s == "." || p == s || strings.HasPrefix(p, s+"/") })
}

// cleanScope checks the paths a client gave; none means the whole workspace.
func cleanScope(g *pathguard.Guard, paths []string) (scope, error) {
	if len(paths) == 0 {
		return scope{"."}, nil
	}
	var sc scope
	for _, p := range paths {
		if p == "" {
			return nil, fmt.Errorf("paths holds an empty path: give files or folders relative to the workspace, or leave paths out for the whole workspace")
		}
		c, err := g.Clean(p)
		if err != nil {
			return nil, err
		}
		sc = append(sc, c)
	}
	return sc, nil
}

// byPath indexes a manifest's entries within sc.
func byPath(m *manifest, sc scope) map[string]*mEntry {
	out := make(map[string]*mEntry, len(m.Entries))
	for i := range m.Entries {
		if e := &m.Entries[i]; sc.has(e.Path) {
			out[e.Path] = e
		}
	}
	return out
}

// same reports whether two entries hold the same thing (a mode change alone is not shown: a restore cannot set
// modes, see checkpoint_restore.go).
func same(a, b *mEntry) bool {
	return a != nil && b != nil && a.Kind == b.Kind && a.Hash == b.Hash && a.Target == b.Target
}

// content gives the bytes of a file entry of one side of a diff.
type content func(e *mEntry) ([]byte, error)

// diffResult is sandbox_diff's result. LongFields puts the files and the diff last in the result's text, so a
// client that keeps a head of a long result (or drops a long line) still shows its model that the diff was cut, how
// big it is (diff_bytes) and how to narrow it (note).
type diffResult struct{ protocol.DiffOutput }

func (diffResult) LongFields() []string { return []string{"files", "diff"} }

// diffManifests compares from with to, within sc. A text diff over the cap is still measured (diff_bytes) file by
// file, each dropped once counted, so the model learns how much it did not see.
func diffManifests(ctx context.Context, from, to *manifest, sc scope, fromData, toData content) (diffResult, error) {
	out := diffResult{DiffOutput: protocol.DiffOutput{Files: []protocol.DiffFile{}}}
	shown := 0 // files whose diff is in the text
	a, b := byPath(from, sc), byPath(to, sc)
	var paths []string
	for _, e := range from.Entries {
		if ea := a[e.Path]; ea != nil && ea.Kind != kindDir && !same(ea, b[e.Path]) {
			paths = append(paths, e.Path)
		}
	}
	for _, e := range to.Entries {
		if eb, ea := b[e.Path], a[e.Path]; eb != nil && eb.Kind != kindDir && (ea == nil || ea.Kind == kindDir) {
			paths = append(paths, e.Path)
		}
	}
	slices.Sort(paths)
	var text strings.Builder
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		ea, eb := a[p], b[p]
		if ea != nil && ea.Kind == kindDir {
			ea = nil // a folder became a file or a symlink: shown as that file added
		}
		if eb != nil && eb.Kind == kindDir {
			eb = nil
		}
		change := protocol.ChangeModified
		switch {
		case ea == nil:
			change = protocol.ChangeAdded
		case eb == nil:
			change = protocol.ChangeDeleted
		}
		if len(out.Files) == maxDiffFiles {
			out.Truncated = true
			break
		}
		out.Files = append(out.Files, protocol.DiffFile{Path: p, Change: change})
		d, err := fileDiff(p, ea, eb, fromData, toData)
		if err != nil {
			return out, err
		}
		out.DiffBytes += len(d)
		if out.Truncated {
			continue // the text is full; the list and the count go on
		}
		if text.Len()+len(d) > maxCheckpointDiffBytes {
			out.Truncated = true
			fmt.Fprintf(&text, "(diff cut at %s; sandbox_diff with paths shows the rest)\n", sizeText(maxCheckpointDiffBytes))
			continue
		}
		text.WriteString(d)
		shown++
	}
	out.Diff = text.String()
	if out.Truncated {
		out.Note = diffNote(out, shown)
	}
	return out, nil
}

// diffNote says what a cut diff left out and how to see it.
func diffNote(out diffResult, shown int) string {
	more := ""
	if len(out.Files) == maxDiffFiles {
		more = fmt.Sprintf(" (the list stops at %d files; there are more, not counted)", maxDiffFiles)
	}
	return fmt.Sprintf("the diff of the %d files listed%s is %s; diff holds the changes of the first %d of them (at most %s). "+
		"Call sandbox_diff again with paths set to the files or folders to see, a few at a time.",
		len(out.Files), more, sizeText(int64(out.DiffBytes)), shown, sizeText(maxCheckpointDiffBytes))
}

// fileDiff is the unified diff of one path; a nil side is a file that does not exist there.
func fileDiff(p string, ea, eb *mEntry, fromData, toData content) (string, error) {
	side := func(e *mEntry, get content) ([]byte, string, error) {
		switch {
		case e == nil:
			return nil, "", nil
		case e.Kind == kindSymlink:
			return []byte("symlink to " + e.Target + "\n"), "", nil
		}
		data, err := get(e)
		if err != nil {
			return nil, "", err
		}
		return data, binaryReason(data, true), nil
	}
	old, binA, err := side(ea, fromData)
	if err != nil {
		return "", err
	}
	new, binB, err := side(eb, toData)
	if err != nil {
		return "", err
	}
	if binA != "" || binB != "" {
		return fmt.Sprintf("Binary files a/%s and b/%s differ\n", p, p), nil
	}
	w := newDiffWriter(p, old)
	sa, sb := lineStarts(old), lineStarts(new)
	x, y := lineIDs(old, new, sa, sb)
	for _, r := range diffLines(x, y) {
		w.change(sa[r.a0], old[sa[r.a0]:sa[r.a1]], new[sb[r.b0]:sb[r.b1]])
	}
	w.close()
	d := w.out.String()
	if w.full {
		d += fmt.Sprintf("(diff of %s cut at %s)\n", p, sizeText(maxDiffBytes))
	}
	// As diff -u and git write them: a file that is new, or gone, is compared with /dev/null.
	switch {
	case ea == nil:
		d = strings.Replace(d, "--- a/"+p+"\n", "--- /dev/null\n", 1)
	case eb == nil:
		d = strings.Replace(d, "+++ b/"+p+"\n", "+++ /dev/null\n", 1)
	}
	return d, nil
}
