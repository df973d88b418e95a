package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
)

func TestContinueResumesTheConversationInItsWorkspace(t *testing.T) {
	dir := t.TempDir()
	ws, runs := filepath.Join(dir, "ws"), filepath.Join(dir, "runs")
	model := looptest.New(t,
		// The first run: a file written, then the turn limit.
		looptest.Step{Calls: []looptest.Call{write("half.txt", "half\n")}, Reasoning: "first half"},
		// The continued run.
		looptest.Step{Calls: []looptest.Call{write("ok.txt", "ok\n")}, Check: func(t testing.TB, req looptest.Request) {
			m := req.Messages
			// The note joins the last result: a user message right after a tool message is refused by Mistral.
			if len(m) != 4 || m[0].Role != "system" || !strings.Contains(m[1].Text(), "write both files") || m[2].Role != "assistant" ||
				m[2].ToolCalls[0].Function.Name != "sandbox_write_file" || *m[2].ReasoningContent != "first half" ||
				m[3].Role != "tool" || m[3].ToolCallID != m[2].ToolCalls[0].ID || !strings.Contains(m[3].Text(), "bytes_written") ||
				!strings.Contains(m[3].Text(), "resumed") {
				t.Errorf("the continued run should send the earlier conversation, then the note: %s", req.Raw)
			}
		}},
		looptest.Step{Content: "done"},
	)
	environ := map[string]string{"OPENAI_BASE_URL": model.BaseURL}
	run1 := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"-runs-dir", runs, "-model", "scripted"}, args...), environ, strings.NewReader(""), &stdout, &stderr)
		t.Logf("exit %d\n%s%s", code, stdout.String(), stderr.String())
		return code, stdout.String()
	}
	if code, _ := run1("-goal", "write both files", "-workspace", ws, "-verify", "test -f half.txt && test -f ok.txt", "-max-turns", "1"); code != exitNotMet {
		t.Fatalf("first run: exit %d", code)
	}
	// The workspace, goal and check come from the earlier run; the working directory's default is not used.
	code, out := run1("-continue", "last")
	if code != exitMet || !strings.Contains(out, "goal met") {
		t.Fatalf("continued run: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(ws, "ok.txt")); err != nil {
		t.Errorf("the continued run should work in the first run's workspace: %v", err)
	}
	transcripts, _ := filepath.Glob(filepath.Join(runs, "*", "transcript.jsonl"))
	if len(transcripts) != 1 {
		t.Fatalf("want one run folder, got %v", transcripts)
	}
	f, _ := os.Open(transcripts[0])
	defer f.Close()
	events, err := loop.ReadTranscript(f)
	if err != nil {
		t.Fatal(err)
	}
	var starts []string
	for _, ev := range events {
		if ev.Type == "start" {
			starts = append(starts, ev.Reason)
		}
	}
	if len(starts) != 2 || starts[1] != "continue" {
		t.Errorf("the transcript should hold both runs: starts %q", starts)
	}
	var s summary
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(transcripts[0]), "summary.json"))
	if json.Unmarshal(b, &s) != nil || s.Outcome != loop.OutcomeMet || s.Turns != 2 {
		t.Errorf("summary of the continued run: %+v", s)
	}
}

func TestContinueNeedsARun(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"-continue", "last", "-runs-dir", t.TempDir()}, map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"},
		strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if code != exitError || !strings.Contains(stderr.String(), "no run in") {
		t.Errorf("exit %d, %s", code, stderr.String())
	}
}
