package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// -plan and -review: the turns they add, with the scripted model and the real servers.

const threeSteps = "1. Write add.sh with the add function.\n2. Write test.sh that checks add 2 3.\n3. Run sh test.sh."

// TestPlanComesFirstAndStaysAtTheHead: the first request offers no tools and asks for a plan; the plan is shown,
// the go-ahead follows it, every later request starts with system, goal, plan request, plan, go-ahead; progress
// shows the step the model names.
func TestPlanComesFirstAndStaysAtTheHead(t *testing.T) {
	head := func(t testing.TB, req looptest.Request) {
		t.Helper()
		m := req.Messages
		// The plan request joins the goal's user message: turns alternate (openaichat/sequence.go).
		if len(m) < 4 || m[1].Role != "user" || !strings.Contains(m[1].Text(), "numbered list") || m[2].Role != "assistant" ||
			m[2].Text() != threeSteps || m[3].Role != "user" || !strings.Contains(m[3].Text(), "Carry out your plan") {
			t.Errorf("the plan should stay at the head of the conversation: %.3000s", req.Raw)
		}
	}
	model := looptest.New(t,
		looptest.Step{Content: threeSteps, Check: func(t testing.TB, req looptest.Request) {
			if len(req.Tools) != 0 {
				t.Errorf("no tools before the plan, got %v", req.Tools)
			}
			if len(req.Messages) != 2 || !strings.Contains(req.Messages[1].Text(), "Goal:") || !strings.Contains(req.Messages[1].Text(), "sh test.sh") {
				t.Errorf("the first request should be system, goal, the plan request naming the check: %s", req.Raw)
			}
		}},
		looptest.Step{Content: "Step 1: writing the files.", Calls: []looptest.Call{write("add.sh", addScript), write("test.sh", testScript)},
			Check: func(t testing.TB, req looptest.Request) {
				head(t, req)
				if len(req.Tools) == 0 {
					t.Error("tools should be offered once the plan is made")
				}
			}},
		looptest.Step{Content: "Step 3: running the test.", Calls: []looptest.Call{command("sh test.sh")}, Check: head},
		looptest.Step{Content: "Done.", Check: head},
	)
	r := runAgent(t, model, "", nil, "-goal", "write an add function in add.sh", "-verify", "sh test.sh", "-plan")
	r.want(t, exitMet, "met", "done")
	for _, want := range []string{"plan (3 steps):", "        2. Write test.sh", "plan: step 1 of 3", "plan: step 3 of 3"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("progress should show %q:\n%s", want, r.stderr)
		}
	}
	var plans int
	for _, ev := range r.events {
		if ev.Type == "plan" && ev.Message.Content == threeSteps {
			plans++
		}
	}
	if plans != 1 {
		t.Errorf("want one plan event in the transcript, got %d", plans)
	}
}

// TestPlanApproval: with -approve the plan waits for an answer — a reason sends it back for a new plan, a yes lets
// the run start (and commands are still asked about); a plain no ends the run.
func TestPlanApproval(t *testing.T) {
	t.Run("revised, then accepted", func(t *testing.T) {
		model := looptest.New(t,
			looptest.Step{Content: "1. Write everything.\n2. Hope."},
			looptest.Step{Content: threeSteps, Check: func(t testing.TB, req looptest.Request) {
				last := req.Messages[len(req.Messages)-1]
				if len(req.Tools) != 0 || last.Role != "user" || !strings.Contains(last.Text(), "Their reason: test it first") {
					t.Errorf("the person's reason should go back for a new plan, with no tools yet: %s", req.Raw)
				}
			}},
			looptest.Step{Calls: []looptest.Call{write("add.sh", addScript), write("test.sh", testScript), command("sh test.sh")}},
			looptest.Step{Content: "Done."},
		)
		r := runAgent(t, model, "test it first\ny\ny\n", nil, "-goal", "write an add function in add.sh", "-verify", "sh test.sh", "-plan", "-approve")
		r.want(t, exitMet, "met", "done")
		if strings.Count(r.stderr, "Go ahead with this plan?") != 2 || !strings.Contains(r.stderr, "Run it?") {
			t.Errorf("both plans and the command should be asked about:\n%s", r.stderr)
		}
	})
	t.Run("refused", func(t *testing.T) {
		model := looptest.New(t, looptest.Step{Content: threeSteps})
		r := runAgent(t, model, "n\n", nil, "-goal", "write an add function in add.sh", "-plan", "-approve")
		r.want(t, exitNotMet, "not_met", loop.StopPlanRefused)
		if n := len(model.Requests()); n != 1 {
			t.Errorf("a refused plan ends the run before any tool use: %d requests", n)
		}
	})
}

// TestReviewSeesTheDiffAndMayGoOn: after the check passes, the model is shown every change since the start (a new
// file, an edited one, a deleted one, a scratch file) and goes on to remove the scratch file; the check runs again
// and the run ends without a second review.
func TestReviewSeesTheDiffAndMayGoOn(t *testing.T) {
	edit := looptest.Call{Name: protocol.ToolEditFile, Args: looptest.Args(protocol.EditFileInput{Path: "notes.txt", OldText: "old line", NewText: "new line"})}
	del := func(p string) looptest.Call {
		return looptest.Call{Name: protocol.ToolDeletePath, Args: looptest.Args(protocol.DeletePathInput{Path: p})}
	}
	model := looptest.New(t,
		looptest.Step{Calls: []looptest.Call{write("add.sh", addScript), write("test.sh", testScript), write("scratch.txt", "debug\n"), edit, del("old.txt")}},
		looptest.Step{Content: "Done."},
		looptest.Step{Calls: []looptest.Call{del("scratch.txt")}, Check: func(t testing.TB, req looptest.Request) {
			last := req.Messages[len(req.Messages)-1].Text()
			for _, want := range []string{"review your work", "--- /dev/null\n+++ b/add.sh", "+add() {", "--- a/notes.txt\n+++ b/notes.txt",
				"@@ -1,3 +1,3 @@\n first\n-old line\n+new line\n last", "deleted: old.txt (4 bytes)", "+++ b/scratch.txt\n@@ -0,0 +1,1 @@\n+debug"} {
				if !strings.Contains(last, want) {
					t.Errorf("the review should show %q:\n%s", want, last)
				}
			}
			if strings.Contains(last, "keep.txt") {
				t.Errorf("an unchanged file is not in the diff:\n%s", last)
			}
		}},
		looptest.Step{Content: "Reviewed: the scratch file is gone; add.sh passes its test."},
	)
	r := runAgent(t, model, "", func(ws string) {
		for name, content := range map[string]string{"notes.txt": "first\nold line\nlast\n", "old.txt": "old\n", "keep.txt": "same\n"} {
			if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}, "-goal", "write an add function in add.sh", "-verify", "sh test.sh", "-review")
	r.want(t, exitMet, "met", "done")
	if r.summary.VerifyRuns != 2 || len(model.Requests()) != 4 {
		t.Errorf("the check should run before the review and again after the change: %d runs, %d requests", r.summary.VerifyRuns, len(model.Requests()))
	}
	if _, err := os.Stat(filepath.Join(r.workspace, "scratch.txt")); !os.IsNotExist(err) {
		t.Errorf("the model's fix after the review should stand: %v", err)
	}
	reviews := 0
	for _, ev := range r.events {
		if ev.Type == "review" {
			reviews++
		}
	}
	if reviews != 1 || !strings.Contains(r.stderr, "review: the model is shown") {
		t.Errorf("one review, shown: %d\n%s", reviews, r.stderr)
	}
}

// TestReviewConfirmed: without -verify, a model that confirms its review ends the run (unverified) on that turn.
func TestReviewConfirmed(t *testing.T) {
	model := looptest.New(t,
		looptest.Step{Calls: []looptest.Call{write("hello.txt", "hello\n")}},
		looptest.Step{Content: "Done."},
		looptest.Step{Content: "Reviewed: hello.txt says hello.", Check: func(t testing.TB, req looptest.Request) {
			if last := req.Messages[len(req.Messages)-1].Text(); !strings.Contains(last, "+++ b/hello.txt\n@@ -0,0 +1,1 @@\n+hello") {
				t.Errorf("the review should show the new file:\n%s", last)
			}
		}},
	)
	r := runAgent(t, model, "", nil, "-goal", "write hello.txt", "-review")
	r.want(t, exitNotMet, "unverified", "done")
	if r.summary.Turns != 3 {
		t.Errorf("want 3 turns (work, done, confirm), got %d", r.summary.Turns)
	}
}
