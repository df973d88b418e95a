package fsserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func editTool(g *pathguard.Guard) *mcp.Tool {
	return &mcp.Tool{
		Name:  protocol.ToolEditFile,
		Title: "Edit file",
		Description: fmt.Sprintf("Replace exact text in a text file and get a unified diff of the change (cut at %s). "+
			"old_text must match the file exactly, whitespace, indentation and line endings included, and must match "+
			"once: include a few surrounding lines to make it unique, or set replace_all=true to replace every match. "+
			"When old_text is not found the error shows the most similar lines with their numbers; when it matches "+
			"more than once, the lines where it does. An edit whose result would be larger than %s is refused before "+
			"anything changes. The file is rewritten atomically. To create a file use sandbox_write_file.",
			sizeText(maxDiffBytes), sizeText(g.Options().MaxWriteBytes)),
		Annotations: annEdit,
	}
}

// maxListedMatches bounds the line numbers listed when old_text matches more than once.
const maxListedMatches = 20

func (s *Filesystem) edit(ctx context.Context, in protocol.EditFileInput) (protocol.EditFileOutput, error) {
	var out protocol.EditFileOutput
	switch {
	case in.Path == "":
		return out, errors.New("path is required: give a file path relative to the workspace")
	case in.OldText == "":
		return out, errors.New("old_text is empty: give the exact text to replace (to create or replace a whole file, use sandbox_write_file)")
	case in.OldText == in.NewText:
		return out, errors.New("old_text and new_text are the same: there is nothing to change")
	}
	defer s.lockFiles(in.Path)()
	// A protected file reads fine, so refuse before reading: the refusal, not a missing old_text, is the answer.
	if err := s.g.CheckChange("edit", in.Path); err != nil {
		return out, err
	}
	rel, data, err := s.g.ReadFile(in.Path)
	if err != nil {
		return out, err
	}
	if why := binaryReason(data, true); why != "" {
		return out, fmt.Errorf("edit %q: refused, %d bytes, binary (%s): only text files can be edited", rel, len(data), why)
	}
	old, new := []byte(in.OldText), []byte(in.NewText)
	n := bytes.Count(data, old) // non-overlapping, leftmost first: the matches a replacement replaces
	switch {
	case n == 0:
		return out, fmt.Errorf("edit %q: old_text was not found; it must match exactly, whitespace and line endings included. %s",
			rel, nearest(data, in.OldText))
	case n > 1 && !in.ReplaceAll:
		return out, fmt.Errorf("edit %q: old_text matches %d times, at lines %s; include more surrounding lines in old_text so it matches once, or set replace_all to replace them all",
			rel, n, matchLines(data, old, n))
	}
	// The size of the result is known before anything is built: an edit that would pass the write cap is refused
	// here, not after building it (100,000-byte new_text for each of 10 million one-byte matches is a terabyte).
	size := int64(len(data)) + int64(n)*(int64(len(new))-int64(len(old)))
	if limit := s.g.Options().MaxWriteBytes; size > limit {
		return out, &pathguard.Error{Op: "edit", Path: rel, Reason: pathguard.ReasonTooLarge,
			Detail: fmt.Sprintf("the result would be %d bytes (%d bytes, %d replacements of %d bytes by %d bytes); the limit is %d bytes per file; nothing was changed",
				size, len(data), n, len(old), len(new), limit)}
	}
	if err := ctx.Err(); err != nil {
		return out, err
	}
	updated, diff := replaceAndDiff(rel, data, old, new, n, int(size))
	if _, _, err := s.g.WriteFile(rel, updated); err != nil {
		var ge *pathguard.Error
		if errors.As(err, &ge) && ge.Op == "write" {
			c := *ge // the client asked for an edit: say so
			c.Op = "edit"
			return out, &c
		}
		return out, err
	}
	return protocol.EditFileOutput{Path: rel, Replacements: n, Diff: diff}, nil
}

// matchLines lists the 1-based line numbers where the first matches of old start, e.g. "3, 17 and 40", and how many
// more there are of the n in all: it never looks past the maxListedMatches-th match.
func matchLines(content, old []byte, n int) string {
	var nums []string
	line, pos := 1, 0
	for at := 0; len(nums) < min(n, maxListedMatches); {
		i := bytes.Index(content[at:], old)
		if i < 0 {
			break
		}
		line += bytes.Count(content[pos:at+i], []byte{'\n'})
		pos = at + i
		nums = append(nums, fmt.Sprint(line))
		at += i + len(old)
	}
	if n > len(nums) {
		nums = append(nums, fmt.Sprintf("%d more", n-len(nums)))
	}
	if len(nums) == 1 {
		return nums[0]
	}
	return strings.Join(nums[:len(nums)-1], ", ") + " and " + nums[len(nums)-1]
}
