package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/prompts"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// Memory across runs. Two things reach a run's system prompt from outside its goal:
//
//   - the workspace's AGENTS.md, the project's own instructions for coding agents (read by Codex, Cursor and
//     others), read through the filesystem server like any file — so a link that leads out of the workspace is
//     refused as it would be for the model — and up to maxAgentsMD bytes;
//   - notes of the last few runs in the same workspace (goal, outcome, the commands that worked, what failed),
//     kept outside the workspace, so they never show up in the project's diff or its git status, in the user's
//     cache folder: <cache>/goalbox/memory/<sha256 of the workspace's real path, 16 hex digits>/notes.jsonl. A
//     workspace.txt beside it names the workspace for a person looking.
//
// Notes are keyed by the workspace itself, never by a URL: with running servers (-fs-url) the agent cannot see
// the workspace, and a URL names a server, not what it serves — a hostile workspace served there once would
// plant text in the prompt of every later run on another workspace at the same address. The filesystem server
// reports no identity of its workspace that the agent could trust (its real path and device/inode, hashed with a
// secret of the server's, would do), so such runs keep no notes and read none, and say so.
//
// A note is what the run's own events say (the model's commands, how they ended, the check), each string cut to
// 200 bytes and a few of each kind, and reaches the next prompt as data: one JSON object a line inside
// <earlier_runs>, under a sentence saying that nothing in it is an instruction (memory.md). maxMemory bounds it.
//
// -no-memory leaves the notes out and writes none; AGENTS.md is part of the project, as visible to the model as any
// file in it, and is read either way.

// maxAgentsMD bounds AGENTS.md in the system prompt: it is sent with every request.
const maxAgentsMD = 16 << 10

// keptNotes is how many notes the file keeps; -memory-runs of them go into a prompt, within maxMemory bytes.
const (
	keptNotes = 50
	maxMemory = 4 << 10
)

// userCacheDir is os.UserCacheDir; the package's tests point it at a folder of their own, so that no test run
// leaves notes in the user's cache.
var userCacheDir = os.UserCacheDir

// memory is one workspace's notes.
type memory struct {
	file string // notes.jsonl; "" with -no-memory, or with running servers
	why  string // why there are no notes, when there are none for a reason the person should hear
	runs int
	rec  *noteRecorder
}

// openMemory finds the notes of the workspace ws (its real path); ws is "" with running servers, which get none.
func openMemory(o GoalOptions, ws string) (*memory, error) {
	m := &memory{runs: o.MemoryRuns, rec: &noteRecorder{}}
	if o.NoMemory {
		return m, nil
	}
	if ws == "" {
		m.why = "no notes of earlier runs with -fs-url: the server at a URL reports nothing of its workspace that could key them"
		return m, nil
	}
	key, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	dir := o.MemoryDir
	if dir == "" {
		cache, err := userCacheDir()
		if err != nil {
			return nil, fmt.Errorf("memory: no cache folder for the notes of earlier runs (%v): give -memory-dir DIR or -no-memory", err)
		}
		dir = filepath.Join(cache, "goalbox", "memory")
	}
	sum := sha256.Sum256([]byte(key))
	dir = filepath.Join(dir, hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "workspace.txt"), []byte(key+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	m.file = filepath.Join(dir, "notes.jsonl")
	return m, nil
}

// notes are the last runs' notes, oldest first. A file that cannot be read is no memory, not a failed run.
func (m *memory) notes() []prompts.RunNote {
	if m.file == "" {
		return nil
	}
	b, err := os.ReadFile(m.file)
	if err != nil {
		return nil
	}
	var all []prompts.RunNote
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var n prompts.RunNote
		if json.Unmarshal(sc.Bytes(), &n) == nil && n.Goal != "" {
			all = append(all, n)
		}
	}
	return all[max(len(all)-m.runs, 0):]
}

// configure puts AGENTS.md and the notes into the run's config (not a continued run's: its system prompt is in its
// history) and listens for what the next note will say.
func (m *memory) configure(ctx context.Context, cfg *loop.Config, sb loop.Sandbox, stderr io.Writer) error {
	if m.file != "" {
		cfg.Observers = append(cfg.Observers, m.rec)
	}
	if m.why != "" {
		fmt.Fprintf(stderr, "agent: %s\n", m.why)
	}
	if cfg.History != nil {
		return nil
	}
	text, err := agentsMD(ctx, sb)
	if err != nil {
		return err
	}
	cfg.Instructions = text
	if notes := m.notes(); len(notes) > 0 {
		if cfg.Memory, err = prompts.Render("memory.md", prompts.Data{Output: notesAsData(notes)}); err != nil {
			return err
		}
	}
	if text != "" || cfg.Memory != "" {
		fmt.Fprintf(stderr, "agent: instructions from AGENTS.md: %d bytes; notes of earlier runs: %d\n", len(text), len(m.notes()))
	}
	return nil
}

// notesAsData is the notes as the prompt shows them: one JSON object a line, newest last, within maxMemory bytes
// (the oldest go first). JSON keeps each string on its line and quoted, whatever a command held.
func notesAsData(notes []prompts.RunNote) string {
	var lines []string
	size := 0
	for i := len(notes) - 1; i >= 0; i-- {
		b, err := json.Marshal(notes[i])
		if err != nil || size+len(b)+1 > maxMemory {
			break
		}
		size += len(b) + 1
		lines = append(lines, string(b)) // json escapes < and >: no tag can close the block
	}
	slices.Reverse(lines)
	return strings.Join(lines, "\n")
}

// agentsMD reads the workspace's AGENTS.md through the filesystem server ("" when there is none).
func agentsMD(ctx context.Context, sb loop.Sandbox) (string, error) {
	args, _ := json.Marshal(protocol.ReadFileInput{Path: "AGENTS.md"})
	res, err := sb.Call(ctx, protocol.ToolReadFile, args)
	if err != nil {
		return "", fmt.Errorf("reading AGENTS.md: %w", err)
	}
	var out protocol.ReadFileOutput
	if res.IsError || json.Unmarshal(res.Structured, &out) != nil {
		return "", nil // none (or not a text file): nothing to follow
	}
	text := strings.TrimSpace(out.Content)
	if out.Truncated || len(text) > maxAgentsMD {
		text = strings.ToValidUTF8(text[:min(len(text), maxAgentsMD)], "") + "\n[AGENTS.md is longer: read the rest with sandbox_read_file]"
	}
	return text, nil
}

// save appends the run's note, keeping the last keptNotes.
func (m *memory) save(goal, verify string, res loop.Result) error {
	if m.file == "" {
		return nil
	}
	n := m.rec.note(goal, verify, res)
	line, err := json.Marshal(n)
	if err != nil {
		return err
	}
	var lines [][]byte
	if b, err := os.ReadFile(m.file); err == nil {
		lines = bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	lines = slices.DeleteFunc(append(lines, line), func(l []byte) bool { return len(l) == 0 })
	lines = lines[max(len(lines)-keptNotes, 0):]
	tmp := m.file + ".tmp"
	if err := os.WriteFile(tmp, append(bytes.Join(lines, []byte("\n")), '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, m.file)
}

// noteRecorder is an observer of the run that keeps what the note says: the model's commands and how they
// ended, the checks.
type noteRecorder struct {
	worked []string // commands that exited 0, each once, most recent last
	failed []string
}

func (n *noteRecorder) Observe(ev loop.Event) error {
	switch {
	case ev.Type == "tool" && ev.Call != nil && ev.Call.Name == protocol.ToolRunCommand && ev.Result != nil:
		var in protocol.RunCommandInput
		var out protocol.RunCommandOutput
		if json.Unmarshal([]byte(ev.Call.Arguments), &in) != nil || in.Command == "" {
			return nil
		}
		cmd := shortCommand(in.Command)
		switch {
		case ev.Outcome != loop.CallOK || json.Unmarshal(ev.Result.Structured, &out) != nil:
			n.fail(fmt.Sprintf("`%s` (%s)", cmd, ev.Outcome))
		case out.TimedOut:
			n.fail(fmt.Sprintf("`%s` (timed out)", cmd))
		case out.ExitCode == 0:
			n.worked = append(slices.DeleteFunc(n.worked, func(c string) bool { return c == cmd }), cmd)
		default:
			n.fail(fmt.Sprintf("`%s` (exit %d)", cmd, out.ExitCode))
		}
	case ev.Type == "verify" && ev.ExitCode != nil && *ev.ExitCode != 0:
		var out protocol.RunCommandOutput
		how := fmt.Sprintf("exit %d", *ev.ExitCode)
		if ev.Result != nil && json.Unmarshal(ev.Result.Structured, &out) == nil && out.TimedOut {
			how = "timed out"
		}
		n.fail(fmt.Sprintf("the check `%s` (%s)", shortCommand(ev.Command), how))
	}
	return nil
}

func (n *noteRecorder) fail(what string) {
	n.failed = append(slices.DeleteFunc(n.failed, func(c string) bool { return c == what }), what)
}

// note is the run's note: the last few of each kind, so that one note stays a few lines of the prompt.
func (n *noteRecorder) note(goal, verify string, res loop.Result) prompts.RunNote {
	last := func(s []string, k int) []string { return slices.Clone(s[max(len(s)-k, 0):]) }
	note := prompts.RunNote{Time: time.Now().UTC().Format(time.RFC3339), Goal: shortCommand(goal), Outcome: res.Outcome,
		Stop: res.StopReason, Verify: verify, Commands: last(n.worked, 5), Failed: last(n.failed, 3)}
	if res.Error != "" {
		note.Failed = append(note.Failed, "the run: "+shortCommand(res.Error))
	}
	return note
}

// shortCommand keeps a note's line short: one line, at most 200 bytes.
func shortCommand(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:197], "") + "..."
	}
	return s
}
