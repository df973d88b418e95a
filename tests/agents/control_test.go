package agents

import (
	"fmt"
	"strings"
	"testing"
)

// The official filesystem server (@modelcontextprotocol/server-filesystem) is the control: in every client's stdio
// session it is configured next to goalbox's servers, and after goalbox's steps the model makes the same calls on it
// for what it can do (write, read, list, an image, an error, a long file). Where the two differ, the step passes only
// when goalbox gave the model at least as much: every fact the model got from the official server's result it also
// got from goalbox's.

// A fact is one thing a model needs from a result, in either server's words.
type fact struct {
	name string
	in   func(Seen) bool
}

// A controlStep is the official server's call for what goalbox's step of the same name did, and the facts compared.
// required are the facts the official server's result must give in every client: without them the control did not
// run, and the comparison would pass for nothing.
type controlStep struct {
	goalbox  string // the name of goalbox's step
	call     Call
	facts    []fact
	required []string
}

func official(tool string, args map[string]any) Call {
	return Call{Server: "official", Tool: tool, Args: args}
}

// textHas is a fact that the result's text (as the model reads it) holds any of the strings.
func textHas(name string, wants ...string) fact {
	return fact{name, func(s Seen) bool {
		text := readable(s.Text)
		for _, w := range wants {
			if strings.Contains(text, w) {
				return true
			}
		}
		return false
	}}
}

var controlSteps = []controlStep{
	{"write", official("write_file", map[string]any{"path": "hello.txt", "content": "hello from the model\n"}),
		[]fact{textHas("the file written", "hello.txt"), textHas("that it was written", `"bytes_written":21`, "Successfully wrote")}, nil},
	{"read", official("read_text_file", map[string]any{"path": "hello.txt"}),
		[]fact{textHas("the text", "hello from the model")}, []string{"the text"}},
	{"list", official("list_directory", map[string]any{"path": "."}),
		[]fact{textHas("dot.png", "dot.png"), textHas("hello.txt", "hello.txt"), textHas("long.txt", "long.txt")}, []string{"dot.png"}},
	{"image", official("read_media_file", map[string]any{"path": "dot.png"}),
		[]fact{{"the pixels", hasDotPNG}, textHas("the image's type", "image/png")}, nil},
	{"error", official("read_text_file", map[string]any{"path": "../outside.txt"}),
		[]fact{textHas("the reason", "outside"), {"not the file's content", func(s Seen) bool { return !strings.Contains(readable(s.Text), "secret") }}},
		[]string{"the reason"}},
	{"long file read", official("read_text_file", map[string]any{"path": "long.txt"}),
		[]fact{textHas("the first line", "line 00001 "), textHas("where the file ends", "line 03000 ", `"total_lines":3000`)}, nil},
}

func hasDotPNG(s Seen) bool {
	for _, img := range s.Images {
		if img.MIME == "image/png" && img.Base64 == dotPNG {
			return true
		}
	}
	return false
}

func controlPlan() []Call {
	var p []Call
	for _, c := range controlSteps {
		p = append(p, c.call)
	}
	return p
}

// checkControl compares, for each control step, what the model saw from the official server (the results after
// goalbox's steps) with what it saw from goalbox's step of the same name.
func checkControl(t *testing.T, m *Model, steps []step) {
	t.Helper()
	last, _ := m.Last()
	at := map[string]int{}
	for i, st := range steps {
		at[st.name] = i
	}
	for k, c := range controlSteps {
		t.Run("control_"+strings.ReplaceAll(c.goalbox, " ", "_"), func(t *testing.T) {
			i, j := at[c.goalbox], len(steps)+k
			if j >= len(last.Results) {
				t.Fatalf("the model never saw the official server's result (%d results of %d; tools offered %v)",
					len(last.Results), len(steps)+len(controlSteps), last.Tools)
			}
			ours, theirs := last.Results[i], last.Results[j]
			var table []string
			for _, f := range c.facts {
				o, r := f.in(ours), f.in(theirs)
				table = append(table, fmt.Sprintf("%s: goalbox %v, official %v", f.name, o, r))
				if r && !o {
					t.Errorf("the official server gave the model %s, goalbox did not: goalbox's result as the model saw it: %s",
						f.name, tail(readable(ours.Text), 800))
				}
			}
			for _, name := range c.required {
				for _, f := range c.facts {
					if f.name == name && !f.in(theirs) {
						t.Errorf("the official server's result lacks %s: the control did not run; the model saw %s", name, tail(theirs.Text, 800))
					}
				}
			}
			t.Logf("%s (the model saw %d bytes from goalbox, %d from the official server)", strings.Join(table, "; "), len(ours.Text), len(theirs.Text))
		})
	}
}
