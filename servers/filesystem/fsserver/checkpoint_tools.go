package fsserver

// The four checkpoint tools: sandbox_checkpoint, sandbox_list_checkpoints, sandbox_diff and sandbox_restore. The
// store (checkpoint_store.go) is opened on first use, so a server whose clients never take a checkpoint never
// makes its folder, and one whose store cannot be made still serves every other tool.

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLabelBytes bounds a checkpoint's label.
const maxLabelBytes = 200

// Annotations. A checkpoint changes nothing in the workspace; it adds to the store and may drop the oldest
// checkpoints past the cap, which is its documented bound and not a change the client asked to be warned of, so
// it is not marked destructive. A restore overwrites and deletes workspace files; restoring the same checkpoint
// twice leaves the same workspace.
var (
	annCheckpoint = mcpserve.Annotations(mcpserve.Hints{Title: "Checkpoint workspace"})
	annRestore    = mcpserve.Annotations(mcpserve.Hints{Title: "Restore checkpoint", Destructive: true, Idempotent: true})
)

// checkpoints serves the checkpoint tools of one workspace.
type checkpoints struct {
	g      *pathguard.Guard
	opts   CheckpointOptions
	logger *slog.Logger
	mu     sync.Mutex
	st     *ckStore
}

// store opens the store on first use; a failure is returned to the call and tried again by the next one.
func (c *checkpoints) store() (*ckStore, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st == nil {
		st, err := openStore(c.g.Dir(), c.opts, c.logger)
		if err != nil {
			return nil, err
		}
		c.st = st
	}
	return c.st, nil
}

func addCheckpointTools(srv *mcp.Server, g *pathguard.Guard, opts CheckpointOptions, logger *slog.Logger) {
	if opts.Protection == nil {
		// The guard's own list (-protect, -unprotect), so that checkpoints leave out exactly what the guard refuses
		// to change; the default list when the guard was given none.
		opts.Protection = g.Options().Protection
	}
	c := &checkpoints{g: g, opts: opts.withDefaults(), logger: logger}
	o := c.opts
	mcpserve.AddTool(srv, logger, &mcp.Tool{
		Name:  protocol.ToolCheckpoint,
		Title: "Checkpoint workspace",
		Description: fmt.Sprintf("Save the whole workspace as it is now, to come back to later with sandbox_restore or "+
			"compare with sandbox_diff; returns its id. label is an optional note (e.g. \"tests pass except parser\"). "+
			"Checkpoints are kept outside the workspace, store each distinct content once, and are cheap: take one "+
			"before a risky change. At most %d checkpoints and %s of distinct content are kept; past that the oldest "+
			"are dropped (dropped lists them). Left out, and never touched by a restore: .git folders, protected "+
			"project files, files over %s, and special files.", o.MaxCount, sizeText(o.MaxBytes), sizeText(g.Options().MaxWriteBytes)),
		Annotations:  annCheckpoint,
		OutputSchema: arraysNotNull(schemaFor[protocol.CheckpointOutput](), "dropped", "skipped"),
	}, withHint(c.checkpoint))
	mcpserve.AddTool(srv, logger, &mcp.Tool{
		Name:         protocol.ToolListCheckpoints,
		Title:        "List checkpoints",
		Description:  "List the workspace's checkpoints, oldest first, with their ids, labels, times, file counts and sizes, and the store's use and caps.",
		Annotations:  annRead("List checkpoints"),
		OutputSchema: arraysNotNull(schemaFor[protocol.ListCheckpointsOutput](), "checkpoints"),
	}, withHint(c.list))
	mcpserve.AddTool(srv, logger, &mcp.Tool{
		Name:  protocol.ToolDiff,
		Title: "Diff against checkpoint",
		Description: fmt.Sprintf("Show what changed since a checkpoint: from is its id; to is a later checkpoint, or "+
			"left out for the workspace as it is now. paths limits it to files or folders. Returns the changed files "+
			"(added, deleted, modified) and a unified diff of the text files (binary files are named, not shown), "+
			"at most %s of diff and %d files (truncated=true says there was more; diff_bytes is the whole diff's size "+
			"and note says how to narrow it with paths).", sizeText(maxCheckpointDiffBytes), maxDiffFiles),
		Annotations:  annRead("Diff against checkpoint"),
		InputSchema:  arraysNotNull(schemaFor[protocol.DiffInput](), "paths"),
		OutputSchema: arraysNotNull(schemaFor[diffResult](), "files"),
	}, withHint(c.diff))
	mcpserve.AddTool(srv, logger, &mcp.Tool{
		Name:  protocol.ToolRestore,
		Title: "Restore checkpoint",
		Description: "Put the workspace back as checkpoint id holds it: files are rewritten, files and folders made " +
			"since are deleted. paths limits the restore to files or folders (each made exactly as it was). The " +
			"workspace as it was just before is saved first as a checkpoint (saved_as), so a restore can be undone. " +
			"not_restored lists what was left as it is and why (symlinks are not recreated; protected project files " +
			"and .git are never touched). Restored files get default permissions when they had been deleted.",
		Annotations:  annRestore,
		InputSchema:  arraysNotNull(schemaFor[protocol.RestoreInput](), "paths"),
		OutputSchema: arraysNotNull(schemaFor[protocol.RestoreOutput](), "not_restored"),
	}, withHint(c.restore))
}

func info(in ckInfo) protocol.CheckpointInfo {
	return protocol.CheckpointInfo{ID: in.ID, Label: in.Label, CreatedAt: in.Created.UTC().Format(time.RFC3339), Files: in.Files, Bytes: in.Bytes}
}

// cleanLabel checks a label: one line of printable text.
func cleanLabel(l string) (string, error) {
	l = strings.TrimSpace(l)
	if len(l) > maxLabelBytes {
		return "", fmt.Errorf("label is %d bytes; at most %d: a short note of what state this is", len(l), maxLabelBytes)
	}
	if strings.ContainsFunc(l, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return "", fmt.Errorf("label holds a control character or line break: give one line of text")
	}
	return l, nil
}

func (c *checkpoints) checkpoint(ctx context.Context, in protocol.CheckpointInput) (protocol.CheckpointOutput, error) {
	var out protocol.CheckpointOutput
	label, err := cleanLabel(in.Label)
	if err != nil {
		return out, err
	}
	st, err := c.store()
	if err != nil {
		return out, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	m, newBytes, dropped, err := st.take(ctx, c.g, label)
	if err != nil {
		return out, err
	}
	return protocol.CheckpointOutput{CheckpointInfo: info(m.info()), NewBytes: newBytes, Dropped: nonNil(dropped),
		Skipped: nonNil(m.Skipped), SkippedCount: m.SkippedCount}, nil
}

// nonNil is s, or an empty list for nil: the lists of a result are never null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// take scans the workspace into a new checkpoint and keeps the store within its caps. The caller holds s.mu.
func (s *ckStore) take(ctx context.Context, g *pathguard.Guard, label string) (*manifest, int64, []string, error) {
	m, newBytes, err := s.save(ctx, g, label, false,
		"checkpoint: the workspace's files take %s, more than the checkpoint store's cap of %s; no checkpoint was taken and none was dropped (whoever runs the server can raise -checkpoint-max-bytes)")
	if err != nil {
		return nil, 0, nil, err
	}
	return m, newBytes, s.enforceCap(), nil
}

// save scans the workspace into a new checkpoint labelled label, unless its distinct content would pass the
// store's cap (overCap is then the refusal, formatted with that size and the cap). With reuse, a workspace exactly
// as the newest checkpoint holds it is not saved again: the scan comes back with that checkpoint's id. The caller
// holds s.mu.
func (s *ckStore) save(ctx context.Context, g *pathguard.Guard, label string, reuse bool, overCap string) (*manifest, int64, error) {
	m, newBytes, err := s.scan(ctx, g, true)
	if err != nil {
		s.collect() // what the scan stored before it failed
		return nil, 0, err
	}
	if reuse && s.latest != nil && sameTree(s.latest, m) {
		m.ID = s.latest.ID
		return m, newBytes, nil
	}
	if distinct := distinctBytes(m); distinct > s.opts.MaxBytes {
		s.collect()
		return nil, 0, fmt.Errorf(overCap, sizeText(distinct), sizeText(s.opts.MaxBytes))
	}
	m.ID, m.Label = fmt.Sprintf("cp-%d", s.next), label
	if err := s.writeManifest(m, overCap); err != nil {
		s.collect()
		return nil, 0, err
	}
	return m, newBytes, nil
}

func distinctBytes(m *manifest) int64 {
	var n int64
	for _, b := range m.info().distinct() {
		n += b.size
	}
	return n
}

func (c *checkpoints) list(_ context.Context, _ protocol.ListCheckpointsInput) (protocol.ListCheckpointsOutput, error) {
	st, err := c.store()
	if err != nil {
		return protocol.ListCheckpointsOutput{}, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	out := protocol.ListCheckpointsOutput{Checkpoints: []protocol.CheckpointInfo{}, StoreBytes: st.bytes, MaxBytes: st.opts.MaxBytes, MaxCheckpoints: st.opts.MaxCount}
	for _, in := range st.list {
		out.Checkpoints = append(out.Checkpoints, info(in))
	}
	return out, nil
}

func (c *checkpoints) diff(ctx context.Context, in protocol.DiffInput) (diffResult, error) {
	if in.From == "" {
		return diffResult{}, fmt.Errorf("from is required: the id of a checkpoint (sandbox_list_checkpoints lists them)")
	}
	sc, err := cleanScope(c.g, in.Paths)
	if err != nil {
		return diffResult{}, err
	}
	st, err := c.store()
	if err != nil {
		return diffResult{}, err
	}
	// The lock keeps the blobs of both sides from being dropped while they are read.
	st.mu.Lock()
	defer st.mu.Unlock()
	from, err := st.find(in.From)
	if err != nil {
		return diffResult{}, err
	}
	stored := func(e *mEntry) ([]byte, error) { return st.blob(e.Hash) }
	to, toData, toName := (*manifest)(nil), content(stored), in.To
	if in.To == "" || in.To == protocol.DiffToWorkspace {
		toName = protocol.DiffToWorkspace
		if to, _, err = st.scan(ctx, c.g, false); err != nil {
			return diffResult{}, err
		}
		toData = func(e *mEntry) ([]byte, error) {
			_, data, err := c.g.ReadFile(e.Path)
			return data, err
		}
	} else if to, err = st.find(in.To); err != nil {
		return diffResult{}, err
	}
	out, err := diffManifests(ctx, from, to, sc, stored, toData)
	out.From, out.To = from.ID, toName
	return out, err
}

func (c *checkpoints) restore(ctx context.Context, in protocol.RestoreInput) (protocol.RestoreOutput, error) {
	if in.ID == "" {
		return protocol.RestoreOutput{}, fmt.Errorf("id is required: the checkpoint to restore (sandbox_list_checkpoints lists them)")
	}
	sc, err := cleanScope(c.g, in.Paths)
	if err != nil {
		return protocol.RestoreOutput{}, err
	}
	st, err := c.store()
	if err != nil {
		return protocol.RestoreOutput{}, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	m, err := st.find(in.ID)
	if err != nil {
		return protocol.RestoreOutput{}, err
	}
	// The workspace as it is is saved first: the restore can be undone, and the scan is what it changes from.
	cur, _, err := st.save(ctx, c.g, "before restoring "+m.ID, true,
		"restore: the workspace as it is now takes %s, more than the checkpoint store's cap of %s, so it cannot be saved first; nothing was changed")
	if err != nil {
		return protocol.RestoreOutput{}, err
	}
	for _, p := range sc {
		if p != "." && !hasUnder(m, p) && !hasUnder(cur, p) {
			return protocol.RestoreOutput{}, fmt.Errorf("restore %q: neither checkpoint %s nor the workspace holds it; paths are files or folders relative to the workspace (sandbox_diff shows what changed)", p, m.ID)
		}
	}
	out, err := st.restoreTo(ctx, c.g, m, cur, sc)
	out.SavedAs = cur.ID
	st.enforceCap() // only now: the cap must not drop the checkpoint being restored while it is read
	return out, err
}

func sameTree(a, b *manifest) bool {
	if len(a.Entries) != len(b.Entries) {
		return false
	}
	for i := range a.Entries {
		if a.Entries[i].Path != b.Entries[i].Path || !same(&a.Entries[i], &b.Entries[i]) {
			return false
		}
	}
	return true
}

func hasUnder(m *manifest, p string) bool {
	return slices.ContainsFunc(m.Entries, func(e mEntry) bool { return scope{p}.has(e.Path) })
}
