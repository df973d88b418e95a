package loop

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goalbox/goalbox/agent/prompts"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// Review before the end (Config.Review). When the model first says it is done (and the check, if any, passed),
// it is shown every change to the workspace since the run began and asked to review them: it confirms by answering
// without a tool call, or goes on working (and the check runs again when it next stops). One review per run: a
// model that keeps finding things to fix is bounded by the limits, not by reviews.
//
// The diff comes from a snapshot of the workspace taken at the start through the filesystem tools themselves
// (sandbox_list_files, then sandbox_read_file with encoding base64), not from git: it works the same on every
// backend and with running servers, in a workspace that is not a repository, and sees untracked files as well as
// tracked ones. Files over snapshotFileBytes, or past snapshotTotalBytes in all, are compared by size alone.

const (
	snapshotFileBytes  = 256 << 10
	snapshotTotalBytes = 16 << 20
)

// snapFile is one file as the snapshot saw it; data is nil when it was too large to keep.
type snapFile struct {
	size int64
	data []byte
}

// snapshot reads the workspace's files through the sandbox.
func (r *runner) snapshot(ctx context.Context) (map[string]snapFile, error) {
	args, _ := json.Marshal(protocol.ListFilesInput{Path: ".", Depth: 1 << 10}) // the server caps the depth
	res, err := r.sb.Call(ctx, protocol.ToolListFiles, args)
	if err != nil {
		return nil, err
	}
	var list protocol.ListFilesOutput
	if res.IsError || json.Unmarshal(res.Structured, &list) != nil {
		return nil, fmt.Errorf("listing the workspace for -review: %s", res.Text)
	}
	files, kept := map[string]snapFile{}, 0
	for _, e := range list.Entries {
		if e.Type != protocol.EntryFile {
			continue
		}
		f := snapFile{size: e.Size}
		if e.Size <= snapshotFileBytes && kept+int(e.Size) <= snapshotTotalBytes {
			args, _ := json.Marshal(protocol.ReadFileInput{Path: e.Path, Encoding: protocol.EncodingBase64})
			res, err := r.sb.Call(ctx, protocol.ToolReadFile, args)
			if err != nil {
				return nil, err
			}
			var out protocol.ReadFileBase64Output
			if !res.IsError && json.Unmarshal(res.Structured, &out) == nil {
				if b, err := base64.StdEncoding.DecodeString(out.Content); err == nil {
					f.data, kept = b, kept+len(b)
				}
			}
		}
		files[e.Path] = f
	}
	return files, nil
}

// review runs the review turn, once. It says whether the model was asked (the loop then goes on).
func (r *runner) review(ctx context.Context) (bool, error) {
	if !r.cfg.Review || r.reviewed || r.before == nil {
		return false, nil
	}
	r.reviewed = true
	t0 := time.Now()
	now, err := r.snapshot(ctx)
	if err != nil {
		return false, err
	}
	diff := keepEnds(workspaceDiff(r.before, now), 4*r.cfg.Limits.ToolOutputBytes)
	text, err := prompts.Render("review.md", prompts.Data{Diff: diff, TestCommand: r.cfg.Verify})
	if err != nil {
		return false, err
	}
	r.event(Event{Type: "review", Turn: r.turns, DurationMs: ms(t0)})
	r.add(Message{Role: RoleUser, Content: text})
	return true, nil
}

// workspaceDiff is a unified diff of the files in after against before, in path order.
func workspaceDiff(before, after map[string]snapFile) string {
	either := maps.Clone(after)
	maps.Copy(either, before)
	paths := slices.Sorted(maps.Keys(either))
	var b strings.Builder
	for _, p := range paths {
		old, hadOld := before[p]
		cur, hasCur := after[p]
		switch {
		case !hasCur:
			fmt.Fprintf(&b, "deleted: %s (%d bytes)\n", p, old.size)
		case hadOld && old.data != nil && cur.data != nil && bytes.Equal(old.data, cur.data):
		case hadOld && (old.data == nil || cur.data == nil):
			if old.size != cur.size {
				fmt.Fprintf(&b, "changed: %s (%d → %d bytes; too large to show)\n", p, old.size, cur.size)
			}
		case !isText(cur.data) || (hadOld && !isText(old.data)):
			if hadOld {
				fmt.Fprintf(&b, "changed: %s (binary, %d → %d bytes)\n", p, old.size, cur.size)
			} else {
				fmt.Fprintf(&b, "new: %s (binary, %d bytes)\n", p, cur.size)
			}
		default:
			b.WriteString(fileDiff(p, old.data, cur.data, hadOld))
		}
	}
	if b.Len() == 0 {
		return "(no changes)"
	}
	return b.String()
}

func isText(b []byte) bool { return utf8.Valid(b) && !bytes.ContainsRune(b, 0) }

// fileDiff is one file's unified diff as a single hunk: from the first changed line to the last, with three lines
// of context. A review reads what changed, so one hunk per file is enough and needs no general diff algorithm; a
// file changed at its top and its bottom shows the unchanged middle too.
func fileDiff(path string, old, cur []byte, existed bool) string {
	a, c := splitLines(old), splitLines(cur)
	pre := 0
	for pre < len(a) && pre < len(c) && a[pre] == c[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(c)-pre && a[len(a)-1-suf] == c[len(c)-1-suf] {
		suf++
	}
	from := max(pre-3, 0)
	aEnd, cEnd := min(len(a)-suf+3, len(a)), min(len(c)-suf+3, len(c))
	var b strings.Builder
	if existed {
		fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", path, path)
	} else {
		fmt.Fprintf(&b, "--- /dev/null\n+++ b/%s\n", path)
	}
	fmt.Fprintf(&b, "@@ -%s +%s @@\n", hunkRange(from, aEnd-from), hunkRange(from, cEnd-from))
	for i := from; i < pre; i++ {
		b.WriteString(" " + a[i] + "\n")
	}
	for i := pre; i < len(a)-suf; i++ {
		b.WriteString("-" + a[i] + "\n")
	}
	for i := pre; i < len(c)-suf; i++ {
		b.WriteString("+" + c[i] + "\n")
	}
	for i := len(c) - suf; i < cEnd; i++ {
		b.WriteString(" " + c[i] + "\n")
	}
	return b.String()
}

// hunkRange is a hunk header's "start,count" (diff -u numbers an empty range from the line before it).
func hunkRange(from, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", from)
	}
	return fmt.Sprintf("%d,%d", from+1, n)
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// checked says the last check passed and nothing has changed since: the goal is met, and a model that confirms
// after its review is not checked again.
func (r *runner) checked() bool {
	return r.lastVerify != nil && r.lastVerify.ExitCode == 0 && !r.dirty
}
