package agents

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// A step is one planned call and the check of what the model saw as its result.
type step struct {
	name  string
	call  Call
	check func(Seen) string // "" when the model saw what a person would want it to see, else what was missing
}

// has returns a check that the text holds every one of want.
func has(want ...string) func(Seen) string {
	return func(s Seen) string {
		text := readable(s.Text)
		for _, w := range want {
			if !strings.Contains(text, w) {
				return "no " + w
			}
		}
		return ""
	}
}

// steps is the session every client runs: write, read, list, run, a huge output and its middle read back, an image, a
// long file read, an error, a background process and its output, a long process and its first page, a checkpoint, a
// dependent call (dependentCall, and with wait_for_previous as Gemini CLI's model is told to send it:
// geminiDependentCall).
func steps(dependent map[string]any) []step {
	return []step{
		{"write", Call{Tool: "sandbox_write_file", Args: map[string]any{"path": "hello.txt", "content": "hello from the model\n"}}, has(`"bytes_written":21`)},
		{"read", Call{Tool: "sandbox_read_file", Args: map[string]any{"path": "hello.txt"}}, has("hello from the model")},
		{"list", Call{Tool: "sandbox_list_files", Args: map[string]any{}}, has("dot.png", "hello.txt")},
		{"run", Call{Tool: "sandbox_run_command", Args: map[string]any{"command": "echo out; echo err >&2; exit 3"}}, has(`"exit_code":3`, `out\n`, `err\n`)},
		{"huge output", Call{Tool: "sandbox_run_command", Args: map[string]any{"command": "seq 1 300000"}},
			has(`"exit_code":0`, `"stdout_truncated":true`, `"stdout_resource":"goalbox-output://`)},
		// The huge output's middle, which its result left out, read back through the tool every client offers.
		{"kept output", Call{Tool: "sandbox_read_output", From: func(seen []Seen) map[string]any {
			uri := stdoutResource.FindStringSubmatch(readable(seen[len(seen)-1].Text))
			if uri == nil {
				return map[string]any{"uri": "none returned"}
			}
			return map[string]any{"uri": uri[1], "offset": seqOffset150000, "length": 100}
		}}, has(`"offset":938888`, `"next_offset":938988`, `"complete":true`, `150000\n150001\n`)},
		{"image", Call{Tool: "sandbox_read_file", Args: map[string]any{"path": "dot.png"}}, func(s Seen) string {
			if hasDotPNG(s) {
				return ""
			}
			return "no image/png with the file's pixels"
		}},
		// A read of a file of long lines, more than a read returns: the model must learn that it was cut, how long
		// the file is and where to read on, and see its start.
		{"long file read", Call{Tool: "sandbox_read_file", Args: map[string]any{"path": "long.txt"}},
			has(`"truncated":true`, `"total_lines":3000`, `"end_line":`, "line 00001 ")},
		{"error", Call{Tool: "sandbox_read_file", Args: map[string]any{"path": "../outside.txt"}}, has("outside the workspace")},
		{"background process", Call{Tool: "sandbox_start_process", Args: map[string]any{"command": "echo started; sleep 60"}}, has(`"process_id":"p`)},
		{"process output", Call{Tool: "sandbox_read_process_output", From: func(seen []Seen) map[string]any {
			id := processID.FindStringSubmatch(readable(seen[len(seen)-1].Text))
			if id == nil {
				return map[string]any{"process_id": "none returned"}
			}
			return map[string]any{"process_id": id[1], "wait_seconds": 5}
		}}, has(`"stdout":"started\n"`, `"running":true`)},
		// A process that prints more than one page (589 KB).
		{"long process output", Call{Tool: "sandbox_start_process", Args: map[string]any{"command": "seq 1 100000; sleep 60"}}, has(`"process_id":"`)},
		{"checkpoint", Call{Tool: "sandbox_checkpoint", Args: map[string]any{"label": "before"}}, has(`"id":`)},
		// The long process's page, read after the checkpoint so that seq has printed it all: the page must reach the
		// model with where to read on.
		{"long process page", Call{Tool: "sandbox_read_process_output", From: func(seen []Seen) map[string]any {
			id := processID.FindStringSubmatch(readable(seen[len(seen)-2].Text)) // the start, before the checkpoint
			if id == nil {
				return map[string]any{"process_id": "none returned"}
			}
			return map[string]any{"process_id": id[1], "wait_seconds": 5}
		}}, has(`"running":true`, `"stdout_offset":`, `"stdout":"1\n2\n3\n`)},
		{"dependent call", Call{Tool: "sandbox_run_command", Args: dependent}, has(`"exit_code":0`, "hello from the model")},
	}
}

var (
	processID      = regexp.MustCompile(`"process_id":"([^"]+)"`)
	stdoutResource = regexp.MustCompile(`"stdout_resource":"(goalbox-output://[^"]+)"`)
)

// longFile is long.txt: 3000 lines of 200 bytes (600 KB), each starting with its number ("line 00001 ").
func longFile() string {
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "line %05d %s\n", i, strings.Repeat("x", 188))
	}
	return b.String()
}

// seqOffset150000 is where "150000" starts in the output of seq 1 300000: the lines of 1 to 9 digits before it.
const seqOffset150000 = 9*2 + 90*3 + 900*4 + 9000*5 + 90000*6 + 50000*7

func plan(steps []step) []Call {
	var p []Call
	for _, s := range steps {
		p = append(p, s.call)
	}
	return p
}

// checkSteps holds each step's result as the model saw it (the conversation's last request) to its check, and
// reports each step apart, so a client's row in the matrix shows which steps pass.
func checkSteps(t *testing.T, m *Model, steps []step, clientOut string) {
	t.Helper()
	last, ok := m.Last()
	if !ok {
		t.Fatalf("the client never asked the model; it printed:\n%s", tail(clientOut, 3000))
	}
	for i, st := range steps {
		t.Run(strings.ReplaceAll(st.name, " ", "_"), func(t *testing.T) {
			if i >= len(last.Results) {
				t.Fatalf("the model never saw this call's result (%d results of %d; tools offered %v); the client printed:\n%s",
					len(last.Results), len(steps), last.Tools, tail(clientOut, 2000))
			}
			seen := last.Results[i]
			t.Logf("the model saw %d bytes of text and %d images", len(seen.Text), len(seen.Images))
			if why := st.check(seen); why != "" {
				b, _ := json.Marshal(seen)
				t.Errorf("%s: the model saw %s", why, tail(string(b), 1500))
			}
		})
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// readable is a result's text as a model reads it: a client that wraps the result in JSON of its own (Gemini CLI
// sends {"output": "<untrusted_context>…"}) has it escaped once more; the strings inside are read as text.
func readable(text string) string {
	var v any
	if json.Unmarshal([]byte(text), &v) != nil {
		return text
	}
	var b strings.Builder
	b.WriteString(text)
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString("\n")
			b.WriteString(x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

var (
	dependentCall       = map[string]any{"command": "cat hello.txt"}
	geminiDependentCall = map[string]any{"command": "cat hello.txt", "wait_for_previous": true}
)

// runMatrix runs the planned steps through one client over both transports, each a session of its own; dependent
// is the client's own form of the dependent call, and run drives the client with a prompt.
func runMatrix(t *testing.T, name string, dependent map[string]any, run func(*session, string) string) {
	t.Parallel()
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			st := steps(dependent)
			p := plan(st)
			if transport == "stdio" { // the control, over the transport the official server speaks
				p = append(p, controlPlan()...)
			}
			s := newSession(t, transport == "http", p)
			out := run(s, "Run the planned calls.")
			t.Logf("%s printed %d lines; the model was asked %d times", name, len(lines(out)), len(s.model.Requests()))
			checkSteps(t, s.model, st, out)
			if s.official {
				checkControl(t, s.model, st)
			}
		})
	}
}
