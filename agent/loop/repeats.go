package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/goalbox/goalbox/agent/prompts"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// A model stuck in a loop makes the same failing call again and again (the same command failing twelve times in
// a row was seen), or goes round the same few calls: the same write, the same failing test, the same write again.
// After RepeatNote rounds of the same calls in a row, at least one of them failing, it is told so (repeating.md);
// after RepeatStop the run ends with StopRepeating and says which calls. A round is up to RepeatLongest calls; one
// call is a round of one. A call that differs (another command, a write of other bytes), or the same one with
// the other outcome, breaks the round; a call that only looks (a read, a listing, a search) does not count: a
// model that reads a file between two identical failing commands has changed nothing, and its next try fails as
// the last did.
const (
	RepeatNote    = 3
	RepeatStop    = 6
	RepeatLongest = 4
)

// StopRepeating: the model made the same failing calls RepeatStop times in a row.
const StopRepeating = "repeating"

// repeats holds the latest calls that count, and what the latest asks for.
type repeats struct {
	recent []callSeen // newest last, at most RepeatStop*RepeatLongest
	note   string     // what the latest call asks to tell the model, if anything
	stop   string     // why the run ends, once it must
}

// callSeen is one call as the loop check compares calls: tool, compacted arguments and whether it failed.
type callSeen struct {
	key    string
	failed bool
}

// noteCall counts one call and its outcome; rep.note, when set, goes to the model after the turn's results.
func (r *runner) noteCall(tc ToolCall, res ToolResult, outcome string) {
	r.rep.note = ""
	seen := callSeen{key: tc.Name + " " + compactArgs(tc.Arguments), failed: failed(tc, res, outcome)}
	if n := len(r.rep.recent); slices.Contains(looksOnly, tc.Name) && n > 0 && seen.key != r.rep.recent[n-1].key {
		return // changes nothing: the calls before it will do what they did
	}
	r.rep.recent = append(r.rep.recent, seen)
	if over := len(r.rep.recent) - RepeatStop*RepeatLongest; over > 0 {
		r.rep.recent = slices.Delete(r.rep.recent, 0, over)
	}
	round, times, fresh := r.rep.loop()
	if round == nil {
		return
	}
	shown := make([]string, len(round))
	for i, c := range round {
		shown[i] = keepEnds(c.key, 300/len(round))
	}
	what := strings.Join(shown, "\n")
	switch {
	case times >= RepeatStop:
		if len(round) == 1 {
			r.rep.stop = fmt.Sprintf("the model made the same failing call %d times in a row: %s", times, what)
		} else {
			r.rep.stop = fmt.Sprintf("the model made the same %d calls, one failing or more, %d times in a row: %s",
				len(round), times, strings.Join(shown, "; "))
		}
	case times == RepeatNote && fresh:
		text, err := prompts.Render("repeating.md", prompts.Data{Command: what, Calls: len(round), Times: times})
		if err != nil {
			r.err = err
		}
		r.rep.note = text
	}
}

// loop finds the shortest round the latest calls repeat, with one failing call in it or more, and how many whole
// times they repeat it in a row; fresh says the latest call completed a round (so that a note comes once per
// count, not again at each call of the next round).
func (rep *repeats) loop() (round []callSeen, times int, fresh bool) {
	calls := rep.recent
	n := len(calls)
	for p := 1; p <= RepeatLongest && 2*p <= n; p++ {
		covered := p // how many of the latest calls follow the round of the latest p
		for covered < n && calls[n-1-covered] == calls[n-1-covered+p] {
			covered++
		}
		if covered < 2*p {
			continue
		}
		round = calls[n-p:]
		if !slices.ContainsFunc(round, func(c callSeen) bool { return c.failed }) {
			return nil, 0, false
		}
		return round, covered / p, covered%p == 0
	}
	return nil, 0, false
}

// looksOnly are the tools that change nothing in the workspace or its processes.
var looksOnly = []string{protocol.ToolReadFile, protocol.ToolListFiles, protocol.ToolSearchFiles, protocol.ToolDiff,
	protocol.ToolListCheckpoints, protocol.ToolReadOutput, protocol.ToolReadProcessOutput, protocol.ToolListProcesses}

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
