package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// These tests run the whole command — options, the real filesystem and executor servers started in-process over
// loopback HTTP, the model adapter — against a scripted model server, the only test double.

type agentRun struct {
	code           int
	stdout, stderr string
	workspace      string
	summary        summary
	events         []loop.Event
}

// runAgent runs the command with the scripted model and a fresh workspace (prepared by setup, if given).
func runAgent(t *testing.T, model *looptest.Server, stdin string, setup func(ws string), args ...string) agentRun {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(ws)
	}
	transcript := filepath.Join(dir, "run", "transcript.jsonl")
	// The notes of earlier runs go to the test's own folder, not the user's cache.
	environ := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": model.BaseURL, "GOALBOX_MEMORY_DIR": filepath.Join(dir, "memory")}
	args = append([]string{"-workspace", ws, "-transcript", transcript, "-model", "scripted"}, args...)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, environ, strings.NewReader(stdin), &stdout, &stderr)
	r := agentRun{code: code, stdout: stdout.String(), stderr: stderr.String(), workspace: ws}
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, r.stdout, r.stderr)
	if b, err := os.ReadFile(filepath.Join(dir, "run", "transcript.summary.json")); err == nil {
		if err := json.Unmarshal(b, &r.summary); err != nil {
			t.Fatalf("summary.json: %v", err)
		}
	}
	if f, err := os.Open(transcript); err == nil {
		defer f.Close()
		if r.events, err = loop.ReadTranscript(f); err != nil {
			t.Fatalf("transcript does not read back: %v", err)
		}
	}
	return r
}

func (r agentRun) want(t *testing.T, code int, outcome, stop string) {
	t.Helper()
	if r.code != code || r.summary.Outcome != outcome || r.summary.StopReason != stop {
		t.Fatalf("got exit %d, outcome %q, stop %q; want exit %d, outcome %q, stop %q", r.code, r.summary.Outcome, r.summary.StopReason, code, outcome, stop)
	}
}

func write(path, content string) looptest.Call {
	return looptest.Call{Name: protocol.ToolWriteFile, Args: looptest.Args(protocol.WriteFileInput{Path: path, Content: content})}
}

func command(cmd string) looptest.Call {
	return looptest.Call{Name: protocol.ToolRunCommand, Args: looptest.Args(protocol.RunCommandInput{Command: cmd})}
}

// toolMessages are the tool results the model was sent in req.
func toolMessages(req looptest.Request) []looptest.Message {
	var out []looptest.Message
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

const addScript = "add() { echo $(( $1 + $2 )); }\n"
const testScript = ". ./add.sh\n[ \"$(add 2 3)\" = 5 ] || { echo 'FAIL: add 2 3 is not 5'; exit 1; }\necho PASS\n"

func TestGoalMet(t *testing.T) {
	model := looptest.New(t,
		looptest.Step{
			Check: func(t testing.TB, req looptest.Request) {
				// Tools come from tools/list on both servers, not from a list in the agent.
				for _, name := range []string{protocol.ToolReadFile, protocol.ToolWriteFile, protocol.ToolEditFile, protocol.ToolListFiles,
					protocol.ToolSearchFiles, protocol.ToolDeletePath, protocol.ToolMovePath, protocol.ToolRunCommand} {
					if !strings.Contains(strings.Join(req.Tools, " "), name) {
						t.Errorf("tool %s not offered to the model; offered %v", name, req.Tools)
					}
				}
				if len(req.Messages) != 2 || req.Messages[0].Role != "system" || !strings.Contains(req.Messages[0].Text(), "sh test.sh") ||
					req.Messages[1].Role != "user" || !strings.Contains(req.Messages[1].Text(), "add function") {
					t.Errorf("first request should be the system prompt naming the test command, then the goal: %s", req.Raw)
				}
			},
			Calls: []looptest.Call{write("add.sh", addScript), write("test.sh", testScript)},
		},
		looptest.Step{Calls: []looptest.Call{command("sh test.sh")},
			Check: func(t testing.TB, req looptest.Request) {
				if tm := toolMessages(req); len(tm) != 2 || !strings.Contains(tm[0].Text(), `"bytes_written"`) {
					t.Errorf("both writes should be answered with their results: %v", tm)
				}
			}},
		looptest.Step{Content: "Done: add.sh passes its test.",
			Check: func(t testing.TB, req looptest.Request) {
				tm := toolMessages(req)
				if last := tm[len(tm)-1].Text(); !strings.Contains(last, `"exit_code":0`) || !strings.Contains(last, "PASS") {
					t.Errorf("the test run's result should reach the model as compact JSON: %s", last)
				}
			}},
	)
	r := runAgent(t, model, "", nil, "-goal", "Write an add function in add.sh with a test", "-verify", "sh test.sh")
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if b, _ := os.ReadFile(filepath.Join(r.workspace, "add.sh")); string(b) != addScript {
		t.Errorf("add.sh in the workspace = %q", b)
	}
	s := r.summary
	if s.Turns != 3 || s.TokensIn != 300 || s.TokensOut != 30 || s.ToolCalls != 3 || s.ToolErrors != 0 || s.VerifyRuns != 1 || s.LastVerify.ExitCode != 0 {
		t.Errorf("summary = %+v", s)
	}
	if !strings.Contains(r.stdout, "goal met (verified)") || !strings.Contains(r.stderr, "turn 2  sandbox_run_command sh test.sh  exit 0") {
		t.Errorf("summary or progress lines missing")
	}
}

func TestClaimWithoutWorkIsNotTrusted(t *testing.T) {
	model := looptest.New(t)
	model.Repeat = &looptest.Step{Content: "All tests pass, the goal is met!"}
	r := runAgent(t, model, "", nil, "-goal", "Write add.sh with a test", "-verify", "sh test.sh", "-max-turns", "3")
	r.want(t, exitNotMet, loop.OutcomeNotMet, loop.StopMaxTurns)
	if r.summary.VerifyRuns != 3 || r.summary.LastVerify.ExitCode == 0 {
		t.Errorf("every claim should be checked and fail: %+v", r.summary)
	}
	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model asked %d times, want 3", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "user" || !strings.Contains(last.Text(), "sh test.sh") || !strings.Contains(last.Text(), "exited with status 2") {
		t.Errorf("the failed check should go back to the model: %s", last.Text())
	}
}

func TestMalformedArgumentsAndUnknownToolsGoBackToTheModel(t *testing.T) {
	model := looptest.New(t,
		looptest.Step{Calls: []looptest.Call{
			{Name: protocol.ToolWriteFile, Args: `{"path": "a.txt", "content": `},
			{Name: "sandbox_teleport", Args: `{}`},
			{Name: protocol.ToolReadFile, Args: `{"path": 42}`},
			{Name: protocol.ToolReadFile, Args: `{"path": "../../etc/passwd"}`},
		}},
		looptest.Step{
			Check: func(t testing.TB, req looptest.Request) {
				tm := toolMessages(req)
				if len(tm) != 4 {
					t.Fatalf("want 4 tool results, got %d", len(tm))
				}
				for i, want := range []string{"not valid", `unknown tool \"sandbox_teleport\"`, "error", "error"} {
					if !strings.Contains(tm[i].Text(), want) || !strings.HasPrefix(tm[i].Text(), `{"error":`) {
						t.Errorf("result %d = %s; want an error containing %q", i+1, tm[i].Text(), want)
					}
				}
			},
			Calls: []looptest.Call{write("a.txt", "fixed\n")},
		},
		looptest.Step{Content: "done"},
	)
	r := runAgent(t, model, "", nil, "-goal", "write a.txt", "-verify", "grep -qx fixed a.txt")
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if r.summary.ToolErrors != 4 || r.summary.ToolCalls != 5 {
		t.Errorf("summary = %+v", r.summary)
	}
}

func TestModelServerErrorsAreRetried(t *testing.T) {
	t.Parallel()
	model := looptest.New(t,
		looptest.Step{Status: 500},
		looptest.Step{Status: 429, Header: map[string]string{"Retry-After": "1"}},
		looptest.Step{Content: "hello"},
	)
	r := runAgent(t, model, "", nil, "-goal", "say hello")
	// Without -verify the model's word cannot be checked: completed, unverified, exit 1.
	r.want(t, exitNotMet, loop.OutcomeUnverified, loop.StopDone)
	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("want 3 attempts, got %d", len(reqs))
	}
	if gap := reqs[2].At.Sub(reqs[1].At); gap < 900*time.Millisecond {
		t.Errorf("Retry-After: 1 not respected: retried after %v", gap)
	}
	if r.summary.Turns != 1 || !strings.Contains(r.stdout, "unverified") {
		t.Errorf("summary = %+v", r.summary)
	}
	if !strings.Contains(r.stderr, "model server: 500 scripted failure 500; retry 1 in ") ||
		!strings.Contains(r.stderr, "model server: 429 scripted failure 429; retry 2 in 1s\n") {
		t.Errorf("failed attempts should show in the progress")
	}
}

func TestModelServerDownIsAnInfrastructureError(t *testing.T) {
	model := looptest.New(t)
	model.Repeat = &looptest.Step{Status: 503}
	r := runAgent(t, model, "", nil, "-goal", "anything", "-retries", "1")
	r.want(t, exitError, loop.OutcomeError, loop.StopModelError)
	if n := len(model.Requests()); n != 2 {
		t.Errorf("want 1 try + 1 retry, got %d requests", n)
	}
}

func TestBudgetsEndTheRun(t *testing.T) {
	list := looptest.Step{Calls: []looptest.Call{{Name: protocol.ToolListFiles, Args: `{}`}}, PromptTokens: 600, CompletionTokens: 100}
	cases := []struct {
		name  string
		step  looptest.Step
		args  []string
		stop  string
		turns int
	}{
		{"turns", list, []string{"-max-turns", "2"}, loop.StopMaxTurns, 2},
		{"tokens", list, []string{"-max-tokens", "1000"}, loop.StopMaxTokens, 2},
		{"cost", list, []string{"-max-cost", "0.002", "-price-in", "1", "-price-out", "1"}, loop.StopMaxCost, 3},
		{"timeout", looptest.Step{Delay: 10 * time.Second}, []string{"-timeout", "1s"}, loop.StopTimeout, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			model := looptest.New(t)
			model.Repeat = &c.step
			start := time.Now()
			r := runAgent(t, model, "", nil, append([]string{"-goal", "keep listing"}, c.args...)...)
			r.want(t, exitNotMet, loop.OutcomeNotMet, c.stop)
			if r.summary.Turns != c.turns {
				t.Errorf("turns = %d, want %d", r.summary.Turns, c.turns)
			}
			if c.stop == loop.StopTimeout && time.Since(start) > 5*time.Second {
				t.Errorf("timeout of 1s took %v", time.Since(start))
			}
		})
	}
}

func TestApproveRefusalGoesBackToTheModel(t *testing.T) {
	model := looptest.New(t,
		looptest.Step{Calls: []looptest.Call{command("touch refused.txt")}},
		looptest.Step{Calls: []looptest.Call{command("touch approved.txt")},
			Check: func(t testing.TB, req looptest.Request) {
				tm := toolMessages(req)
				if got := tm[0].Text(); !strings.Contains(got, "refused") || !strings.Contains(got, "not on my disk") {
					t.Errorf("refusal with reason should reach the model: %s", got)
				}
			}},
		looptest.Step{Content: "done"},
	)
	r := runAgent(t, model, "not on my disk\ny\n", nil, "-goal", "touch files", "-approve", "-verify", "test -f approved.txt")
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if _, err := os.Stat(filepath.Join(r.workspace, "refused.txt")); err == nil {
		t.Error("a refused command ran")
	}
	if !strings.Contains(r.stderr, "Run it? [y/N") || !strings.Contains(r.stderr, "touch refused.txt") {
		t.Error("the command was not shown before asking")
	}
}

func TestTranscriptHoldsEverything(t *testing.T) {
	big := strings.Repeat("0123456789abcdef\n", 4096) // 68 KiB, over the 4 KiB tool output budget
	model := looptest.New(t,
		looptest.Step{Calls: []looptest.Call{write("big.txt", big), command("cat big.txt; echo tail-marker")}, PromptTokens: 123, CompletionTokens: 45},
		looptest.Step{Content: "done", PromptTokens: 7, CompletionTokens: 8,
			Check: func(t testing.TB, req looptest.Request) {
				out := toolMessages(req)[1].Text()
				if len(out) > 5<<10 || !strings.Contains(out, "bytes left out") || !strings.Contains(out, "tail-marker") || !strings.HasPrefix(out, "{") {
					t.Errorf("model should get head and tail of the output within budget, got %d bytes", len(out))
				}
			}},
	)
	r := runAgent(t, model, "", nil, "-goal", "write big.txt", "-verify", "test -s big.txt", "-tool-output-bytes", "4096")
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)

	var types []string
	var tools []loop.Event
	var usage loop.Usage
	for _, ev := range r.events {
		types = append(types, ev.Type)
		switch ev.Type {
		case "tool":
			tools = append(tools, ev)
		case "model":
			usage.PromptTokens += ev.Usage.PromptTokens
			usage.CompletionTokens += ev.Usage.CompletionTokens
		}
	}
	if want := "start message message model tool tool model checkpoint verify end"; strings.Join(types, " ") != want { // the checkpoint before the verify
		t.Fatalf("events %v, want %s", types, want)
	}
	if usage != (loop.Usage{PromptTokens: 130, CompletionTokens: 53}) {
		t.Errorf("usage in transcript = %+v", usage)
	}
	if len(r.events[0].Tools) < 8 || r.events[1].Message.Role != "system" || r.events[2].Message.Role != "user" {
		t.Errorf("start and first messages incomplete")
	}
	if calls := r.events[3].Message.ToolCalls; len(calls) != 2 || calls[0].ID != tools[0].Call.ID || calls[1].ID != tools[1].Call.ID {
		t.Errorf("tool events do not match the calls")
	}
	if !strings.Contains(tools[0].Call.Arguments, strings.ReplaceAll(big[:100], "\n", `\n`)) || len(tools[0].Call.Arguments) < len(big) {
		t.Errorf("the write's arguments should be kept whole")
	}
	var out protocol.RunCommandOutput
	if err := json.Unmarshal(tools[1].Result.Structured, &out); err != nil {
		t.Fatalf("command result does not decode: %v", err)
	}
	if out.Stdout != big+"tail-marker\n" {
		t.Errorf("transcript should keep the full output (%d bytes), has %d", len(big), len(out.Stdout))
	}
	end := r.events[len(r.events)-1].Summary
	if end == nil || end.Outcome != loop.OutcomeMet || end.TokensIn != 130 {
		t.Errorf("end event summary = %+v", end)
	}
}

func TestConfigurationErrorsExit2(t *testing.T) {
	model := looptest.New(t)
	cases := []struct {
		name    string
		environ map[string]string
		args    []string
		want    string
	}{
		{"no key or endpoint", map[string]string{}, []string{"-goal", "x"}, "OPENAI_API_KEY"},
		{"no goal", map[string]string{"OPENAI_API_KEY": "k"}, nil, "no goal"},
		{"one server url", map[string]string{"OPENAI_API_KEY": "k"}, []string{"-goal", "x", "-fs-url", "http://127.0.0.1:1/mcp"}, "both -fs-url and -exec-url"},
		{"cost without price", map[string]string{"OPENAI_API_KEY": "k"}, []string{"-goal", "x", "-model", "mystery", "-max-cost", "1"}, "-price-in"},
		{"bad flag", map[string]string{"OPENAI_API_KEY": "k"}, []string{"-goal", "x", "-max-turns", "many"}, "invalid value"},
		{"bad env", map[string]string{"OPENAI_API_KEY": "k", "GOALBOX_MAX_TURNS": "many"}, []string{"-goal", "x"}, "GOALBOX_MAX_TURNS"},
		{"server down", map[string]string{"OPENAI_BASE_URL": model.BaseURL}, []string{"-goal", "x", "-fs-url", "http://127.0.0.1:1/mcp", "-exec-url", "http://127.0.0.1:1/mcp"}, "connect"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"-runs-dir", t.TempDir()}, c.args...)
			code := run(context.Background(), args, c.environ, strings.NewReader(""), io.Discard, &stderr)
			if code != exitError || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), c.want)
			}
		})
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("a configuration error should not reach the model (%d requests)", n)
	}
}

func TestFlagsWinOverEnvironment(t *testing.T) {
	o, err := parseGoalOptions([]string{"-goal", "g", "-max-turns", "7"}, map[string]string{
		"GOALBOX_MAX_TURNS": "3", "GOALBOX_MAX_TOKENS": "999", "GOALBOX_MODEL": "m-env", "OPENAI_BASE_URL": "http://x/v1", "GOALBOX_TIMEOUT": "90s",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxTurns != 7 || o.MaxTokens != 999 || o.Model != "m-env" || o.BaseURL != "http://x/v1" || o.Timeout != 90*time.Second {
		t.Errorf("options = %+v", o)
	}
}

func TestTimeoutKillsARunningCommand(t *testing.T) {
	t.Parallel()
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{command("sleep 30")}})
	start := time.Now()
	r := runAgent(t, model, "", nil, "-goal", "wait", "-timeout", "2s")
	r.want(t, exitNotMet, loop.OutcomeNotMet, loop.StopTimeout)
	if d := time.Since(start); d > 6*time.Second {
		t.Errorf("a 2s timeout took %v", d)
	}
}

func TestLimitStopStillVerifiesTheWork(t *testing.T) {
	// The model did the work but never said so: the check, not the model, decides.
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{write("done.txt", "ok\n")}})
	model.Repeat = &looptest.Step{Calls: []looptest.Call{{Name: protocol.ToolListFiles, Args: `{}`}}}
	r := runAgent(t, model, "", nil, "-goal", "write done.txt", "-verify", "test -f done.txt", "-max-turns", "3")
	r.want(t, exitMet, loop.OutcomeMet, loop.StopMaxTurns)
	if r.summary.VerifyRuns != 1 {
		t.Errorf("verify runs = %d, want 1 (at the end)", r.summary.VerifyRuns)
	}
}

func TestOldOutputsAreElidedForTheModelButKeptInTheTranscript(t *testing.T) {
	content := strings.Repeat("line of text\n", 600) // 7.8 KB a read
	read := looptest.Call{Name: protocol.ToolReadFile, Args: `{"path":"f.txt"}`}
	model := looptest.New(t,
		looptest.Step{Calls: []looptest.Call{write("f.txt", content)}},
		looptest.Step{Calls: []looptest.Call{read}},
		looptest.Step{Calls: []looptest.Call{read}},
		looptest.Step{Calls: []looptest.Call{read}},
		looptest.Step{Content: "done", Check: func(t testing.TB, req looptest.Request) {
			tm := toolMessages(req)
			if !strings.Contains(tm[1].Text(), `"elided"`) || strings.Contains(tm[3].Text(), `"elided"`) {
				t.Errorf("the oldest read should be elided and the latest kept: %.100s / %.100s", tm[1].Text(), tm[3].Text())
			}
			if strings.Contains(req.Messages[2].ToolCalls[0].Function.Arguments, "line of text") {
				t.Errorf("the old write's content should be elided from the conversation")
			}
		}},
	)
	r := runAgent(t, model, "", nil, "-goal", "read f.txt", "-context-bytes", "30000", "-tool-output-bytes", "10000")
	r.want(t, exitNotMet, loop.OutcomeUnverified, loop.StopDone)
	for i, req := range model.Requests() {
		if len(req.Raw) > 30000 {
			t.Errorf("request %d is %d bytes, over -context-bytes 30000", i+1, len(req.Raw))
		}
	}
	elides, fullReads := 0, 0
	for _, ev := range r.events {
		if ev.Type == "elide" {
			elides++
		}
		if ev.Type == "tool" && ev.Call.Name == protocol.ToolReadFile && strings.Contains(string(ev.Result.Structured), strings.Repeat(`line of text\n`, 600)) {
			fullReads++
		}
	}
	if elides == 0 || fullReads != 3 {
		t.Errorf("transcript: %d elide events, %d full reads (want >0 and 3)", elides, fullReads)
	}
}

func TestInterruptEndsTheRunWithASummary(t *testing.T) {
	model := looptest.New(t)
	model.Repeat = &looptest.Step{Delay: 20 * time.Second}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(500*time.Millisecond, cancel) // as SIGINT does in main
	var stdout bytes.Buffer
	code := run(ctx, []string{"-goal", "x", "-workspace", filepath.Join(dir, "ws"), "-runs-dir", filepath.Join(dir, "runs")},
		map[string]string{"OPENAI_BASE_URL": model.BaseURL}, strings.NewReader(""), &stdout, io.Discard)
	sums, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "summary.json"))
	if code != exitInterrupted || len(sums) != 1 || !strings.Contains(stdout.String(), "stop reason  canceled") {
		t.Errorf("exit %d, summaries %v, stdout %s", code, sums, stdout.String())
	}
}

func TestVerifyTheExecutorRefusesIsAConfigurationError(t *testing.T) {
	model := looptest.New(t, looptest.Step{Content: "done"})
	// 10 hours is over the executor's maximum timeout: the model could never fix that, so it is not sent back.
	r := runAgent(t, model, "", nil, "-goal", "x", "-verify", "true", "-verify-timeout", "10h")
	r.want(t, exitError, loop.OutcomeError, loop.StopSandboxError)
	if !strings.Contains(r.summary.Error, "-verify") {
		t.Errorf("error should name -verify: %q", r.summary.Error)
	}
}

func TestToolCallsWithoutIDsGetOne(t *testing.T) {
	model := looptest.New(t,
		looptest.Step{Calls: []looptest.Call{write("a.txt", "a")}, Content: "Writing the file now.\nSecond line.", NoIDs: true},
		looptest.Step{Content: "done", Check: func(t testing.TB, req looptest.Request) {
			tm := toolMessages(req)
			if len(tm) != 1 || tm[0].ToolCallID == "" || tm[0].ToolCallID != req.Messages[2].ToolCalls[0].ID {
				t.Errorf("tool answer not linked to its call: %s", req.Raw)
			}
		}},
	)
	r := runAgent(t, model, "", nil, "-goal", "x", "-verify", "test -f a.txt")
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if !strings.Contains(r.stderr, "turn 1  says: Writing the file now.\n") {
		t.Errorf("the model's words should show in the progress")
	}
}

func TestSlowModelAttemptIsRetried(t *testing.T) {
	t.Parallel()
	model := looptest.New(t, looptest.Step{Delay: 3 * time.Second}, looptest.Step{Content: "hello"})
	r := runAgent(t, model, "", nil, "-goal", "hi", "-model-timeout", "1s")
	r.want(t, exitNotMet, loop.OutcomeUnverified, loop.StopDone)
	if n := len(model.Requests()); n != 2 {
		t.Errorf("want the slow attempt and its retry, got %d requests", n)
	}
}

func TestLongCommandsShowProgress(t *testing.T) {
	t.Parallel()
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{command("sleep 11.5; echo finished")}}, looptest.Step{Content: "done"})
	r := runAgent(t, model, "", nil, "-goal", "wait", "-verify", "true")
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if !strings.Contains(r.stderr, "sandbox_run_command: running for 10s") {
		t.Errorf("no progress line for an 11 s command")
	}
}

func TestTranscriptIsOnDiskAsTheRunGoes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.jsonl")
	model := looptest.New(t,
		looptest.Step{Calls: []looptest.Call{write("a.txt", "a")}},
		looptest.Step{Content: "done", Check: func(t testing.TB, req looptest.Request) {
			// Asked for turn 2: everything of turn 1 must already be in the file, read by another reader.
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			events, err := loop.ReadTranscript(f)
			var types []string
			for _, ev := range events {
				types = append(types, ev.Type)
			}
			if err != nil || strings.Join(types, " ") != "start message message model tool" {
				t.Errorf("transcript during the run: %v (%v)", types, err)
			}
		}},
	)
	r := runAgent(t, model, "", nil, "-goal", "x", "-verify", "test -f a.txt", "-transcript", path)
	if r.code != exitMet {
		t.Fatalf("exit %d", r.code)
	}
}
