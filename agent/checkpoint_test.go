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

// checkScript is a test suite in shell that prints pytest's closing line: one test per file a, b and c, passing
// when the file holds "ok".
const checkScript = `f=0; p=0
for x in a b c; do if grep -qx ok $x.txt 2>/dev/null; then p=$((p+1)); else f=$((f+1)); fi; done
if [ $f -gt 0 ]; then echo "=== $f failed, $p passed in 0.01s ==="; exit 1; fi
echo "=== $p passed in 0.01s ==="
`

func withCheckScript(ws string) {
	os.WriteFile(filepath.Join(ws, "check.sh"), []byte(checkScript), 0o644)
}

// checkpointEvents are the agent's own checkpoint calls in the transcript, as "reason tool".
func checkpointEvents(r agentRun) []string {
	var out []string
	for _, ev := range r.events {
		if ev.Type == "checkpoint" {
			out = append(out, ev.Reason+" "+ev.Call.Name)
		}
	}
	return out
}

// TestRegressionHintAndRestore: a first verify fails one test; the model then breaks two more and stops; the second
// verify fails three, so the model is told, with the diff since the better state, restores it with sandbox_restore
// (discovered from the server like every tool), fixes the last test and the goal is met.
func TestRegressionHintAndRestore(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // the in-process server's checkpoint store
	model := looptest.New(t,
		looptest.Step{Calls: []looptest.Call{write("a.txt", "ok\n"), write("b.txt", "ok\n")},
			Check: func(t testing.TB, req looptest.Request) {
				for _, name := range []string{protocol.ToolCheckpoint, protocol.ToolListCheckpoints, protocol.ToolDiff, protocol.ToolRestore} {
					if !strings.Contains(strings.Join(req.Tools, " "), name) {
						t.Errorf("tool %s not offered to the model", name)
					}
				}
			}},
		looptest.Step{Content: "Done."}, // verify 1: 1 failed
		looptest.Step{Calls: []looptest.Call{write("a.txt", "broken\n"), write("b.txt", "broken\n")}},
		looptest.Step{Content: "Done again."}, // verify 2: 3 failed, worse
		looptest.Step{Calls: []looptest.Call{{Name: protocol.ToolRestore, Args: looptest.Args(protocol.RestoreInput{ID: "cp-1"})}},
			Check: func(t testing.TB, req looptest.Request) {
				last := req.Messages[len(req.Messages)-1]
				text := last.Text()
				for _, want := range []string{"exited with status 1", "worse than an earlier state", "checkpoint cp-1 had 1 failing test",
					"now (cp-2) there are 3 failing tests", "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-ok\n+broken\n", `sandbox_restore (id "cp-1"`} {
					if last.Role != "user" || !strings.Contains(text, want) {
						t.Errorf("the model should be told of the regression (%q):\n%s", want, text)
					}
				}
			}},
		looptest.Step{Calls: []looptest.Call{write("c.txt", "ok\n")},
			Check: func(t testing.TB, req looptest.Request) {
				tm := toolMessages(req)
				if r := tm[len(tm)-1].Text(); !strings.Contains(r, `"id":"cp-1"`) || !strings.Contains(r, `"written":2`) {
					t.Errorf("the restore's result: %s", r)
				}
			}},
		looptest.Step{Content: "All three pass."}, // verify 3: met
	)
	r := runAgent(t, model, "", withCheckScript, "-goal", "make a, b and c ok", "-verify", "sh check.sh")
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if b, _ := os.ReadFile(filepath.Join(r.workspace, f)); string(b) != "ok\n" {
			t.Errorf("%s = %q", f, b)
		}
	}
	if got, want := strings.Join(checkpointEvents(r), ", "), "before_verify sandbox_checkpoint, before_verify sandbox_checkpoint, "+
		"regression sandbox_diff, before_verify sandbox_checkpoint"; got != want {
		t.Errorf("checkpoint calls: %s\nwant %s", got, want)
	}
	c := r.summary.Checkpoints
	if c == nil || c.Taken != 3 || c.Best != "cp-3" || c.BestTests != "0 failing tests" || c.Restored {
		t.Errorf("summary checkpoints: %+v", c)
	}
}

// TestRunEndsOnItsBestState: a verify fails one test, the model breaks another and runs out of turns; the final
// verify fails two, so the agent restores the best state (the model's last edit stays restorable), and the
// summary and the printed report say which state the workspace is left in.
func TestRunEndsOnItsBestState(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	model := looptest.New(t,
		looptest.Step{Calls: []looptest.Call{write("a.txt", "ok\n"), write("b.txt", "ok\n")}},
		looptest.Step{Content: "Done."}, // verify 1: 1 failed
		looptest.Step{Calls: []looptest.Call{write("a.txt", "broken\n")}},
	)
	r := runAgent(t, model, "", withCheckScript, "-goal", "make a, b and c ok", "-verify", "sh check.sh", "-max-turns", "3")
	r.want(t, exitNotMet, loop.OutcomeNotMet, loop.StopMaxTurns)
	if b, _ := os.ReadFile(filepath.Join(r.workspace, "a.txt")); string(b) != "ok\n" {
		t.Errorf("a.txt = %q: the run should end on its best state", b)
	}
	c := r.summary.Checkpoints
	if c == nil || c.Best != "cp-1" || !c.Restored || c.SavedAs != "cp-2" || c.BestTests != "1 failing test" {
		t.Fatalf("summary checkpoints: %+v", c)
	}
	if !strings.Contains(r.stdout, "best state   cp-1 (1 failing test), restored: the workspace is left in it; the last state is cp-2") {
		t.Errorf("the printed summary should say which state the workspace is in:\n%s", r.stdout)
	}
	if got := strings.Join(checkpointEvents(r), ", "); got != "before_verify sandbox_checkpoint, before_verify sandbox_checkpoint, end_on_best sandbox_restore" {
		t.Errorf("checkpoint calls: %s", got)
	}
	// The last state stays restorable: cp-2 holds the model's broken edit.
	if !strings.Contains(r.stderr, "agent sandbox_restore cp-1") {
		t.Errorf("progress should show the restore:\n%s", r.stderr)
	}
}

// TestNoCheckpointsWithoutVerify: without -verify there is nothing to compare, and the agent takes none.
func TestNoCheckpointsWithoutVerify(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{write("a.txt", "ok\n")}}, looptest.Step{Content: "Done."})
	r := runAgent(t, model, "", nil, "-goal", "write a.txt")
	if len(checkpointEvents(r)) != 0 || r.summary.Checkpoints != nil {
		t.Errorf("checkpoints without -verify: %v %+v", checkpointEvents(r), r.summary.Checkpoints)
	}
}
