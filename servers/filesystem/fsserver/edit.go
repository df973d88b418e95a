package fsserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func editTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  protocol.ToolEditFile,
		Title: "Edit file",
		Description: "Replace exact text in a text file and get a unified diff of the change. old_text must match the " +
			"file exactly, whitespace, indentation and line endings included, and must match once: include a few " +
			"surrounding lines to make it unique, or set replace_all=true to replace every match. When old_text is not " +
			"found the error shows the most similar lines with their numbers; when it matches more than once, the " +
			"lines where it does. The file is rewritten atomically. To create a file use sandbox_write_file.",
		Annotations: annEdit,
	}
}

// maxListedMatches bounds the line numbers listed when old_text matches more than once.
const maxListedMatches = 20

func (s *server) edit(ctx context.Context, in protocol.EditFileInput) (protocol.EditFileOutput, error) {
	var out protocol.EditFileOutput
	switch {
	case in.Path == "":
		return out, errors.New("path is required: give a file path relative to the workspace")
	case in.OldText == "":
		return out, errors.New("old_text is empty: give the exact text to replace (to create or replace a whole file, use sandbox_write_file)")
	case in.OldText == in.NewText:
		return out, errors.New("old_text and new_text are the same: there is nothing to change")
	}
	rel, err := s.g.Clean(in.Path)
	if err != nil {
		return out, err
	}
	defer s.lock(rel)()
	rel, data, err := s.g.ReadFile(in.Path)
	if err != nil {
		return out, err
	}
	if why := binaryReason(data, true); why != "" {
		return out, fmt.Errorf("edit %q: refused, %d bytes, binary (%s): only text files can be edited", rel, len(data), why)
	}
	content := string(data)
	idx := matchOffsets(content, in.OldText)
	switch {
	case len(idx) == 0:
		return out, fmt.Errorf("edit %q: old_text was not found; it must match exactly, whitespace and line endings included. %s",
			rel, nearest(content, in.OldText))
	case len(idx) > 1 && !in.ReplaceAll:
		return out, fmt.Errorf("edit %q: old_text matches %d times, at lines %s; include more surrounding lines in old_text so it matches once, or set replace_all to replace them all",
			rel, len(idx), matchLines(content, idx))
	}
	if err := ctx.Err(); err != nil {
		return out, err
	}
	updated, diff := replaceAndDiff(rel, content, in.OldText, in.NewText, idx)
	if _, _, err := s.g.WriteFile(rel, []byte(updated)); err != nil {
		return out, err
	}
	return protocol.EditFileOutput{Path: rel, Replacements: len(idx), Diff: diff}, nil
}

// matchOffsets are the byte offsets of the non-overlapping matches of old in content, leftmost first.
func matchOffsets(content, old string) []int {
	var idx []int
	for at := 0; ; {
		i := strings.Index(content[at:], old)
		if i < 0 {
			return idx
		}
		idx = append(idx, at+i)
		at += i + len(old)
	}
}

// matchLines lists the 1-based line numbers where matches start, e.g. "3, 17 and 40".
func matchLines(content string, idx []int) string {
	var nums []string
	line, pos := 1, 0
	for i, off := range idx {
		if i == maxListedMatches {
			nums = append(nums, fmt.Sprintf("%d more", len(idx)-i))
			break
		}
		line += strings.Count(content[pos:off], "\n")
		pos = off
		nums = append(nums, fmt.Sprint(line))
	}
	if len(nums) == 1 {
		return nums[0]
	}
	return strings.Join(nums[:len(nums)-1], ", ") + " and " + nums[len(nums)-1]
}
