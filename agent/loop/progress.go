package loop

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
)

// Observer hears every event of a run, in order, as it happens: the transcript keeps them, Progress prints them.
// The loop states each fact once, as an Event, and leaves its rendering to its observers. An error from Observe
// ends the run (StopInternal): the record of a run must be complete.
type Observer interface {
	Observe(Event) error
}

// Progress prints one line per step of a run for a person watching: each model reply with its tokens (and cost,
// when the price is known), what the model says, each tool call with its outcome, each verification. It never
// fails the run: a progress line that cannot be written is lost.
type Progress struct {
	w     io.Writer
	price Price
	steps int // the plan's steps (plan.go), for "step N of M"
}

// NewProgress prints to w.
func NewProgress(w io.Writer) *Progress { return &Progress{w: w} }

// Observe prints the line for ev, if ev is a step worth a line.
func (p *Progress) Observe(ev Event) error {
	took := (time.Duration(ev.DurationMs) * time.Millisecond).String()
	switch {
	case ev.Type == "start" && ev.Price != nil:
		p.price = *ev.Price
	case ev.Type == "model":
		est := ""
		if ev.Usage.Estimated {
			est = " estimated"
		}
		fmt.Fprintf(p.w, "turn %d  model %s  tokens%s in %d out %d (run total %d%s)  %s\n", ev.Turn, took, est,
			ev.Usage.PromptTokens, ev.Usage.CompletionTokens, ev.TotalUsage.Total(), p.costNote(*ev.TotalUsage), replyNote(*ev.Message, ev.FinishReason, ev.Outcome))
		if say := firstLine(ev.Message.Content); say != "" {
			fmt.Fprintf(p.w, "turn %d  says: %s\n", ev.Turn, say)
		}
		if step := StepOf(ev.Message.Content); p.steps > 0 && step != "" {
			fmt.Fprintf(p.w, "turn %d  plan: step %s of %d\n", ev.Turn, step, p.steps)
		}
	case ev.Type == "plan":
		p.steps = PlanSteps(ev.Message.Content)
		fmt.Fprintf(p.w, "turn %d  plan (%d steps):\n        %s\n", ev.Turn, p.steps, strings.ReplaceAll(ev.Message.Content, "\n", "\n        "))
	case ev.Type == "review":
		fmt.Fprintf(p.w, "turn %d  review: the model is shown the workspace's changes since the start  %s\n", ev.Turn, took)
	case ev.Type == "tool":
		fmt.Fprintf(p.w, "turn %d  %s %s  %s%s  %s\n", ev.Turn, ev.Call.Name, argNote(*ev.Call), resultNote(ev.Outcome, *ev.Result), imagesNote(ev.Result.Images), took)
		fmt.Fprint(p.w, detail(*ev.Result), newFile(*ev.Call, *ev.Result))
	case ev.Type == "stop_process":
		fmt.Fprintf(p.w, "turn %d  agent stops %s (%s) %s  %s  %s\n", ev.Turn, argNote(*ev.Call), shorten(ev.Command, 60),
			stopWhen[ev.Reason], resultNote(ev.Outcome, *ev.Result), took)
	case ev.Type == "verify":
		fmt.Fprintf(p.w, "turn %d  verify %q  %s  %s\n", ev.Turn, ev.Command, resultNote(CallOK, *ev.Result), took)
		if more := detail(*ev.Result); more != "" {
			fmt.Fprint(p.w, more)
		}
	case ev.Type == "checkpoint":
		fmt.Fprintf(p.w, "turn %d  agent %s %s  %s  %s\n", ev.Turn, ev.Call.Name, argNote(*ev.Call), checkpointNote(ev), took)
	case ev.Type == "tool_mode":
		fmt.Fprintf(p.w, "turn %d  the model server refused tools (%s): tools are now described in the prompt and called as <tool_call> text\n", ev.Turn, shorten(ev.Error, 120))
	case ev.Type == "elide":
		why := ""
		if ev.Reason != "" {
			why = " (the server said: " + shorten(ev.Error, 100) + ")"
		}
		fmt.Fprintf(p.w, "turn %d  context: %d bytes of old output elided%s\n", ev.Turn, ev.SavedBytes, why)
	case ev.Type == "error" && ev.Call != nil:
		fmt.Fprintf(p.w, "turn %d  %s  failed: %s\n", ev.Turn, ev.Call.Name, ev.Error)
	case ev.Type == "error" && ev.Command == "":
		fmt.Fprintf(p.w, "turn %d  model error after %s: %s\n", ev.Turn, took, strings.TrimPrefix(ev.Error, "model: "))
	}
	return nil
}

func (p *Progress) costNote(total Usage) string {
	if !p.price.Known() {
		return ""
	}
	return fmt.Sprintf(", $%.4f", p.price.Cost(total))
}

func replyNote(m Message, finish, outcome string) string {
	switch n := len(m.ToolCalls); {
	case outcome == ReplyUnreadable:
		return "tool calls in the text that could not be read: the model is told"
	case finish == "length":
		return fmt.Sprintf("%d tool call(s), cut off at the output limit", n)
	case n > 0:
		return fmt.Sprintf("%d tool call(s)", n)
	case m.Content == "":
		return "an empty reply"
	}
	return "no tool call: the model says it is done"
}

// firstLine is the first non-empty line of s, shortened for a progress line.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return shorten(l, 120)
		}
	}
	return ""
}

// argNote is a short view of a call's arguments for the progress line: the path or the command.
func argNote(tc ToolCall) string {
	var m map[string]any
	if json.Unmarshal([]byte(tc.Arguments), &m) != nil {
		return "(bad arguments)"
	}
	for _, k := range []string{"command", "path", "source", "pattern", "process_id", "id", "from", "label"} {
		if s, ok := m[k].(string); ok {
			return shorten(strings.ReplaceAll(s, "\n", " "), 60)
		}
	}
	return ""
}

// stopWhen says in a progress line why the agent stopped a process.
var stopWhen = map[string]string{StopBeforeVerify: "before verifying", StopAtEnd: "at the end of the run"}

// resultNote is a short view of a call's result: a command's exit status, a process started or stopped.
func resultNote(outcome string, res ToolResult) string {
	if outcome == CallOK {
		var o struct {
			ExitCode  *int   `json:"exit_code"`
			TimedOut  bool   `json:"timed_out"`
			Killed    bool   `json:"killed"`
			ProcessID string `json:"process_id"`
			StartedAt string `json:"started_at"`
		}
		switch {
		case json.Unmarshal(res.Structured, &o) != nil:
		case o.StartedAt != "":
			return "started " + o.ProcessID
		case o.TimedOut:
			return "timed out" // the executor reports exit -1 for a command it killed
		case o.ExitCode != nil && *o.ExitCode == -1:
			return "killed (exit -1)"
		case o.Killed && o.ExitCode != nil:
			return fmt.Sprintf("exit %d, killed", *o.ExitCode)
		case o.ExitCode != nil:
			return fmt.Sprintf("exit %d", *o.ExitCode)
		}
		return CallOK
	}
	return outcome + ": " + shorten(strings.SplitN(res.Text, "\n", 2)[0], 80)
}

// detail is what a person wants under a tool's line: the diff of an edit, the last lines of a command that failed.
func detail(res ToolResult) string {
	var o struct {
		Diff     string `json:"diff"`
		ExitCode *int   `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	if res.IsError || json.Unmarshal(res.Structured, &o) != nil {
		return ""
	}
	switch {
	case o.Diff != "":
		return indented(o.Diff, 0, 30)
	case o.ExitCode != nil && *o.ExitCode != 0:
		return indented(strings.TrimRight(o.Stdout, "\n")+"\n"+strings.TrimRight(o.Stderr, "\n"), 6, 0)
	}
	return ""
}

// newFile is the first lines of a file a write created, as a diff shows a file that did not exist: the write's own
// text, since the server's result says only that it created the file. (A rewrite of a file that existed shows
// none: the server sends no diff of it, and the content before is not the agent's to guess.)
func newFile(tc ToolCall, res ToolResult) string {
	var in protocol.WriteFileInput
	var out protocol.WriteFileOutput
	if tc.Name != protocol.ToolWriteFile || res.IsError || json.Unmarshal(res.Structured, &out) != nil || !out.Created ||
		json.Unmarshal([]byte(tc.Arguments), &in) != nil || in.Encoding == "base64" || in.Content == "" {
		return ""
	}
	return indented("+"+strings.ReplaceAll(strings.TrimRight(in.Content, "\n"), "\n", "\n+"), 0, 30)
}

// indented is text's last `last` lines (or first `first`), each indented under the progress line.
func indented(text string, last, first int) string {
	lines := strings.Split(strings.Trim(text, "\n"), "\n")
	cut := ""
	switch {
	case last > 0 && len(lines) > last:
		lines = lines[len(lines)-last:]
	case first > 0 && len(lines) > first:
		cut = fmt.Sprintf("        [%d more lines]\n", len(lines)-first)
		lines = lines[:first]
	}
	var b strings.Builder
	for _, l := range lines {
		if l = strings.TrimRight(l, " \r"); l != "" {
			fmt.Fprintf(&b, "        | %s\n", shorten(l, 160))
		}
	}
	return b.String() + cut
}

// checkpointNote says what a checkpoint call did in a few words, not its JSON.
func checkpointNote(ev Event) string {
	if ev.Result.IsError {
		return "failed: " + shorten(strings.SplitN(ev.Result.Text, "\n", 2)[0], 80)
	}
	var o struct {
		ID      string `json:"id"`
		SavedAs string `json:"saved_as"`
		Files   []any  `json:"files"`
	}
	_ = json.Unmarshal(ev.Result.Structured, &o)
	switch {
	case o.SavedAs != "":
		return "restored; the state before is " + o.SavedAs
	case o.ID != "":
		return o.ID
	case o.Files != nil:
		return fmt.Sprintf("%d file(s) changed", len(o.Files))
	}
	return "done"
}

// shorten cuts s to at most n bytes, an ellipsis included, without splitting a character.
func shorten(s string, n int) string {
	const ellipsis = "…"
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:max(n-len(ellipsis), 0)], "") + ellipsis
}

// imagesNote counts a result's images for its progress line.
func imagesNote(imgs []Image) string {
	if len(imgs) == 0 {
		return ""
	}
	n := 0
	for _, img := range imgs {
		n += len(img.Data)
	}
	return fmt.Sprintf(", %d image(s), %d bytes", len(imgs), n)
}
