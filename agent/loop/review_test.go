package loop

import (
	"strings"
	"testing"
)

func TestWorkspaceDiff(t *testing.T) {
	f := func(s string) snapFile { return snapFile{size: int64(len(s)), data: []byte(s)} }
	before := map[string]snapFile{
		"same.txt":  f("a\n"),
		"edit.txt":  f("1\n2\n3\n4\n5\n6\n7\n8\n9\n"),
		"gone.txt":  f("bye\n"),
		"big.bin":   {size: 1 << 20},
		"bin.dat":   f("\x00\x01"),
		"tail.txt":  f("x\ny"),
		"grown.log": {size: 10},
	}
	after := map[string]snapFile{
		"same.txt":  f("a\n"),
		"edit.txt":  f("1\n2\n3\n4\nfive\n6\n7\n8\n9\n"),
		"new.txt":   f("hello\nworld\n"),
		"big.bin":   {size: 1 << 20},
		"bin.dat":   f("\x00\x02"),
		"tail.txt":  f("x\ny\nz\n"),
		"grown.log": {size: 20},
	}
	got := workspaceDiff(before, after)
	for _, want := range []string{
		"--- a/edit.txt\n+++ b/edit.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
		"--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n",
		"deleted: gone.txt (4 bytes)\n",
		"changed: bin.dat (binary, 2 → 2 bytes)\n",
		"changed: grown.log (10 → 20 bytes; too large to show)\n",
		"@@ -1,2 +1,3 @@\n x\n y\n+z\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diff should hold %q; got:\n%s", want, got)
		}
	}
	for _, not := range []string{"same.txt", "big.bin"} {
		if strings.Contains(got, not) {
			t.Errorf("unchanged %s is in the diff:\n%s", not, got)
		}
	}
	if strings.Index(got, "bin.dat") > strings.Index(got, "edit.txt") {
		t.Errorf("files should come in path order:\n%s", got)
	}
	if d := workspaceDiff(before, before); d != "(no changes)" {
		t.Errorf("no changes: %q", d)
	}
}

func TestPlanStepsAndProgress(t *testing.T) {
	plan := "Here is my plan:\n1. Read the code.\n2) Write the fix.\n  3. Run go test ./...\n\nThat is 3 steps; 4 is not one."
	if n := PlanSteps(plan); n != 3 {
		t.Errorf("PlanSteps = %d, want 3", n)
	}
	for reply, want := range map[string]string{"Step 2: writing the fix.": "2", "Now on step 10.": "10", "Stepping back.": "", "": ""} {
		if got := StepOf(reply); got != want {
			t.Errorf("StepOf(%q) = %q, want %q", reply, got, want)
		}
	}
}

// TestImagesCountInTheBudgetAndGoFirst: an old image message is elided before old tool outputs that came after it,
// and its size is what its base64 weighs.
func TestImagesCountInTheBudgetAndGoFirst(t *testing.T) {
	img := Image{MIMEType: "image/png", Data: make([]byte, 9000)}
	withImage := Message{Role: RoleUser, Content: "The image(s) returned by ...:", Images: []Image{img}}
	if got, plain := messageSize(withImage), messageSize(Message{Role: RoleUser, Content: withImage.Content}); got-plain < 12000 {
		t.Errorf("a 9000-byte image should add its 12000 bytes of base64: %d", got-plain)
	}
	r := budgetRunner(30_000,
		Message{Role: RoleSystem, Content: "sys"},
		Message{Role: RoleUser, Content: "goal"},
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "1", Name: "sandbox_read_file", Arguments: `{"path":"a.png"}`}}},
		Message{Role: RoleTool, ToolCallID: "1", Content: `{"path":"a.png"}`},
		withImage,
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "2", Name: "sandbox_read_file", Arguments: `{"path":"b.png"}`}}},
		Message{Role: RoleTool, ToolCallID: "2", Content: `{"path":"b.png"}`},
		Message{Role: RoleUser, Content: "latest", Images: []Image{img, img}},
	)
	r.fit()
	if old := r.msgs[4]; old.Images != nil || !strings.Contains(old.Content, "1 image(s) shown earlier were removed") {
		t.Errorf("the old image should be elided with a note: %+v", old.Content)
	}
	if latest := r.msgs[7]; len(latest.Images) != 2 {
		t.Errorf("the latest images fit and stay: %d", len(latest.Images))
	}
}

// TestThePlanIsNeverElided: with a plan at the head, elision starts after the go-ahead.
func TestThePlanIsNeverElided(t *testing.T) {
	big := strings.Repeat("p", 3000)
	r := budgetRunner(24_000,
		Message{Role: RoleSystem, Content: "sys"},
		Message{Role: RoleUser, Content: "goal"},
		Message{Role: RoleUser, Content: "plan please " + big},
		Message{Role: RoleAssistant, Content: "1. " + big},
		Message{Role: RoleUser, Content: "go ahead " + big},
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "1", Name: "sandbox_read_file", Arguments: `{"path":"a"}`}}},
		Message{Role: RoleTool, ToolCallID: "1", Content: strings.Repeat("x", 20_000)},
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "2", Name: "sandbox_read_file", Arguments: `{"path":"b"}`}}},
		Message{Role: RoleTool, ToolCallID: "2", Content: "short"},
	)
	r.head = 5
	r.fit()
	for i := 2; i < 5; i++ {
		if r.msgs[i].Elided || !strings.HasSuffix(r.msgs[i].Content, big) {
			t.Errorf("message %d of the plan was elided: %.60s", i, r.msgs[i].Content)
		}
	}
	if !r.msgs[6].Elided {
		t.Error("the old output after the plan should have gone")
	}
}
