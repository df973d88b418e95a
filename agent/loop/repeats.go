package loop

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/goalbox/goalbox/agent/prompts"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// A model stuck in a loop makes the same failing call again and again (the same command failing twelve times in
// a row was seen). After RepeatNote identical failing calls in a row it is told so (repeating.md); after
// RepeatStop the run ends with StopRepeating and says which call. A different call, or the same one succeeding,
// starts the count again.
const (
	RepeatNote = 3
	RepeatStop = 6
)

// StopRepeating: the model made the same failing call RepeatStop times in a row.
const StopRepeating = "repeating"

// repeats counts the latest run of identical failing calls.
type repeats struct {
	key   string // tool and arguments, compacted
	count int
	note  string // what the latest call asks to tell the model, if anything
	stop  string // why the run ends, once it must
}

// noteCall counts one call and its outcome; rep.note, when set, goes to the model after the turn's results.
func (r *runner) noteCall(tc ToolCall, res ToolResult, outcome string) {
	r.rep.note = ""
	if !failed(tc, res, outcome) {
		r.rep = repeats{}
		return
	}
	key := tc.Name + " " + compactArgs(tc.Arguments)
	if key != r.rep.key {
		r.rep = repeats{key: key}
	}
	r.rep.count++
	shown := keepEnds(key, 300)
	switch {
	case r.rep.count >= RepeatStop:
		r.rep.stop = fmt.Sprintf("the model made the same failing call %d times in a row: %s", r.rep.count, shown)
	case r.rep.count == RepeatNote:
		text, err := prompts.Render("repeating.md", prompts.Data{Command: shown, Times: r.rep.count})
		if err != nil {
			r.err = err
		}
		r.rep.note = text
	}
}

// failed says a call did not do what was asked: a tool error of any kind, or a command that exited non-zero.
func failed(tc ToolCall, res ToolResult, outcome string) bool {
	if outcome != CallOK {
		return true
	}
	if tc.Name != protocol.ToolRunCommand {
		return false
	}
	var out struct {
		ExitCode *int `json:"exit_code"`
	}
	return json.Unmarshal(res.Structured, &out) == nil && out.ExitCode != nil && *out.ExitCode != 0
}

func compactArgs(args string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(args)) != nil {
		return args
	}
	return b.String()
}
