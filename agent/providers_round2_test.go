package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// The second round of providers: what they send beside a message, how they stream calls, how they word
// an overflow, what their chat templates refuse. Each test plays one provider's documented behaviour through the
// scripted model and runs the whole command.

// Gemini 3 puts a thought signature on each function call (extra_content.google.thought_signature) and refuses a
// history that sends the call back without it.
func TestGeminiThoughtSignaturesGoBackAsTheyCame(t *testing.T) {
	const sig = "CiQBcsjafQ6P3qS9+signature=="
	model := looptest.New(t, looptest.GeminiSignedCalls(sig, writeOK, command("cat ok.txt")),
		looptest.Step{Content: "done", Check: func(t testing.TB, req looptest.Request) {
			calls := req.Messages[2].ToolCalls
			if len(calls) != 2 || string(calls[0].ExtraContent) != `{"google":{"thought_signature":"`+sig+`"}}` {
				t.Errorf("each call should go back with its extra_content as it came: %s", req.Raw)
			}
		}})
	model.Rules = []looptest.Rule{looptest.ThoughtSignaturesReplayed}
	r := runAgent(t, model, "", nil, goal(verifyOK...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
}

// What a provider sends beside a message goes back with it: OpenRouter streams reasoning_details item by item and
// wants them all back on the assistant message, in order.
func TestWhatAProviderSentBesideAMessageGoesBack(t *testing.T) {
	item := func(i int) string {
		return fmt.Sprintf(`{"type":"reasoning.encrypted","data":"enc-%d","format":"openai-responses-v1","index":%d}`, i, i)
	}
	delta := func(d string, finish string) string {
		return `{"id":"gen-1","object":"chat.completion.chunk","model":"scripted","choices":[{"index":0,"delta":` + d + `,"finish_reason":` + finish + `}]}`
	}
	model := looptest.New(t, looptest.Step{Chunks: []string{
		delta(`{"role":"assistant","content":"","reasoning_details":[`+item(0)+`]}`, "null"),
		delta(`{"reasoning_details":[`+item(1)+`]}`, "null"),
		delta(`{"tool_calls":[{"index":0,"id":"call_or_1","type":"function","function":{"name":"sandbox_write_file","arguments":`+strconv.Quote(writeOK.Args)+`}}]}`, "null"),
		delta(`{}`, `"tool_calls"`),
	}}, looptest.Step{Content: "done", Check: func(t testing.TB, req looptest.Request) {
		var body struct {
			Messages []struct {
				Role             string          `json:"role"`
				ReasoningDetails json.RawMessage `json:"reasoning_details"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(req.Raw, &body); err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		for _, m := range body.Messages {
			if m.Role == "assistant" {
				_ = json.Compact(&compact, m.ReasoningDetails)
			}
		}
		if want := "[" + item(0) + "," + item(1) + "]"; compact.String() != want {
			t.Errorf("the assistant message should carry back %s, not %q", want, compact.String())
		}
	}})
	r := runAgent(t, model, "", nil, goal(verifyOK...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
}

// MiniMax on NVIDIA NIM and Kimi on Fireworks repeat the tool's name in every chunk of a streamed call.
func TestAToolNameRepeatedInEveryChunkIsOneName(t *testing.T) {
	model := looptest.New(t, looptest.NameInEveryChunk(writeOK), looptest.Step{Content: "done"})
	r := runAgent(t, model, "", nil, goal(verifyOK...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if r.summary.ToolErrors != 0 || r.summary.ToolCalls != 1 {
		t.Errorf("one call to sandbox_write_file: %+v", r.summary)
	}
}

// Several calls without an index and with empty or equal IDs, streamed or whole, are several calls.
func TestCallsWithoutIndexOrDistinctIDsStayApart(t *testing.T) {
	t.Parallel()
	cases := map[string]looptest.Step{
		"streamed, no ids":        looptest.NoIndexCalls("", writeOK, command("cat ok.txt")),
		"streamed, equal ids":     looptest.NoIndexCalls("call_0", writeOK, command("cat ok.txt")),
		"not streamed, equal ids": looptest.WholeCallsSameID("call_0", writeOK, command("cat ok.txt")),
		"not streamed, no ids":    looptest.WholeCallsSameID("", writeOK, command("cat ok.txt")),
	}
	for name, step := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			model := looptest.New(t, step, looptest.Step{Content: "done"})
			model.Rules = []looptest.Rule{looptest.UniqueToolCallIDs}
			r := runAgent(t, model, "", nil, goal(verifyOK...)...)
			r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
			if r.summary.ToolErrors != 0 || r.summary.ToolCalls != 2 {
				t.Errorf("two calls, neither an error: %+v", r.summary)
			}
		})
	}
}

// -model-timeout bounds the wait for the answer to start: comments after the headers are not an answer.
func TestKeepAlivesAloneDoNotHoldTheAttempt(t *testing.T) {
	model := looptest.New(t, looptest.Step{KeepAliveFor: 20 * time.Second, Calls: []looptest.Call{writeOK}},
		looptest.Step{Calls: []looptest.Call{writeOK}}, looptest.Step{Content: "done"})
	r := runAgent(t, model, "", nil, goal(append([]string{"-model-timeout", "1s"}, verifyOK...)...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if !strings.Contains(r.stderr, "no answer for 1s (-model-timeout); retry 1") || len(model.Requests()) != 3 {
		t.Errorf("the silent attempt should end at the model timeout and be retried: %d requests", len(model.Requests()))
	}
}

// A context overflow, in each provider's words and status, shrinks the conversation and asks again with the
// smaller one: never the same oversized body again (llama.cpp's older 500 was retried as it was).
func TestContextOverflowInEveryProvidersWords(t *testing.T) {
	t.Parallel()
	read := command("seq 1 3000")
	for name, overflow := range map[string]looptest.Step{
		"Gemini": looptest.GeminiContextLength, "llama.cpp": looptest.LlamaCppContextLength,
		"llama.cpp older 500": looptest.LlamaCppOldContextLength, "xAI": looptest.XAIContextLength,
		"TGI": looptest.TGIContextLength, "Mistral": looptest.MistralContextLength,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			model := looptest.New(t, looptest.Step{Calls: []looptest.Call{read}}, overflow,
				looptest.Step{Calls: []looptest.Call{writeOK}}, looptest.Step{Content: "done"})
			r := runAgent(t, model, "", nil, goal(verifyOK...)...)
			r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
			reqs := model.Requests()
			if len(reqs) != 4 || strings.Contains(r.stderr, "retry 1") {
				t.Fatalf("the overflow is shrunk, not retried: %d requests", len(reqs))
			}
			if refused, next := len(reqs[1].Raw), len(reqs[2].Raw); next > refused*3/4 {
				t.Errorf("the request after the overflow should be smaller: %d bytes, then %d", refused, next)
			}
		})
	}
}

// Mistral's order (and alternating chat templates): an empty first reply, calls without IDs and a -continue after
// a run that stopped on a tool turn each still send a conversation it accepts.
func TestMistralAcceptsEveryConversationSent(t *testing.T) {
	t.Run("empty first reply, then calls without IDs", func(t *testing.T) {
		model := looptest.New(t, looptest.Step{}, looptest.Step{NoIDs: true, Calls: []looptest.Call{writeOK, command("cat ok.txt")}},
			looptest.Step{Content: "I am writing a", FinishReason: "length"}, looptest.Step{Content: "done"})
		model.Rules = []looptest.Rule{looptest.MistralRoles}
		r := runAgent(t, model, "", nil, goal(verifyOK...)...)
		r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
		if n := len(model.Requests()); n != 4 {
			t.Errorf("no request should be refused: %d requests", n)
		}
	})
	t.Run("continue after a tool turn", func(t *testing.T) {
		dir := t.TempDir()
		model := looptest.New(t, looptest.Step{IDs: []string{"D681PevKs"}, Calls: []looptest.Call{writeOK}}, looptest.Step{Content: "done"})
		model.Rules = []looptest.Rule{looptest.MistralRoles}
		environ := map[string]string{"OPENAI_BASE_URL": model.BaseURL, "GOALBOX_MEMORY_DIR": filepath.Join(dir, "memory")}
		base := []string{"-runs-dir", filepath.Join(dir, "runs"), "-model", "scripted"}
		var out bytes.Buffer
		if code := run(context.Background(), append(base, "-goal", "write ok.txt", "-workspace", filepath.Join(dir, "ws"), "-verify", "grep -qx ok ok.txt", "-max-turns", "1"),
			environ, strings.NewReader(""), &out, &out); code != exitMet {
			t.Logf("%s", out.String()) // the turn limit's check finds the work done
		}
		out.Reset()
		if code := run(context.Background(), append(base, "-continue", "last"), environ, strings.NewReader(""), &out, &out); code != exitMet {
			t.Errorf("continued run: exit %d\n%s", code, out.String())
		}
		if n := len(model.Requests()); n != 2 {
			t.Errorf("no request should be refused: %d requests", n)
		}
	})
}

// The same failing call again and again: after three the model is told, after six the run stops and says why.
func TestTheSameFailingCallIsNoticed(t *testing.T) {
	failing := command("python3 -c 'import nosuchmodule'")
	model := looptest.New(t)
	model.Repeat = &looptest.Step{Calls: []looptest.Call{failing}}
	r := runAgent(t, model, "", nil, goal("-max-turns", "20")...)
	r.want(t, exitNotMet, loop.OutcomeNotMet, loop.StopRepeating)
	reqs := model.Requests()
	if len(reqs) != loop.RepeatStop {
		t.Errorf("the run should stop at the %dth identical failure: %d requests", loop.RepeatStop, len(reqs))
	}
	told := func(req looptest.Request) bool {
		return strings.Contains(string(req.Raw), "this same call 3 times in a row")
	}
	if told(reqs[loop.RepeatNote-1]) || !told(reqs[loop.RepeatNote]) {
		t.Errorf("the model should be told after the %dth failure, not before", loop.RepeatNote)
	}
	if !strings.Contains(r.summary.Error, "same failing call 6 times in a row") || !strings.Contains(r.stdout, "import nosuchmodule") {
		t.Errorf("the summary should say why: %q", r.summary.Error)
	}
}

// Reads between the same failing call change nothing, so they do not hide the loop; a write of other bytes between
// starts the count again (the control: with a change between, the same run goes on to its turn limit).
func TestAFailingCallRepeatedBetweenReadsIsNoticed(t *testing.T) {
	t.Parallel()
	failing := command("test -f nosuch.txt")
	cases := map[string]struct {
		between func(turn int) looptest.Call
		stop    string
		turns   int
	}{
		"a read between": {func(int) looptest.Call { return looptest.Call{Name: protocol.ToolListFiles, Args: `{"path":"."}`} },
			loop.StopRepeating, loop.RepeatStop},
		"a write of other bytes between": {func(turn int) looptest.Call { return write("notes.txt", fmt.Sprintf("try %d\n", turn)) },
			loop.StopMaxTurns, loop.RepeatStop + 2},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			model := looptest.New(t)
			turn := 0 // Respond runs under the model's lock
			model.Respond = func(looptest.Request) looptest.Step {
				turn++
				return looptest.Step{Calls: []looptest.Call{failing, c.between(turn)}}
			}
			r := runAgent(t, model, "", nil, goal("-max-turns", strconv.Itoa(loop.RepeatStop+2))...)
			r.want(t, exitNotMet, loop.OutcomeNotMet, c.stop)
			if n := len(model.Requests()); n != c.turns {
				t.Errorf("want %d requests, got %d", c.turns, n)
			}
		})
	}
}

// Going round the same calls is a loop too: the same write (the same bytes), the same failing test, the same write
// again. After three rounds the model is told which calls, after six the run stops and says why; the shortest round
// is named, whatever turn it started in. The control is the run above whose writes differ.
func TestTheSameRoundOfCallsIsNoticed(t *testing.T) {
	t.Parallel()
	round := []looptest.Call{write("fix.py", "print('same fix')\n"), command("python3 fix.py && exit 1")}
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{command("true")}})
	// One call a turn, so that a round spans turns. Respond runs under the model's lock.
	turn := 0
	model.Respond = func(looptest.Request) looptest.Step {
		turn++
		return looptest.Step{Calls: []looptest.Call{round[(turn-1)%len(round)]}}
	}
	r := runAgent(t, model, "", nil, goal("-max-turns", "30")...)
	r.want(t, exitNotMet, loop.OutcomeNotMet, loop.StopRepeating)
	reqs := model.Requests()
	if want := 1 + loop.RepeatStop*len(round); len(reqs) != want {
		t.Errorf("the run should stop when the sixth round ends: %d requests, want %d", len(reqs), want)
	}
	told := 0
	for i, req := range reqs {
		if strings.Contains(string(req.Raw), "these same 2 calls, in this order, 3 times in a row") {
			if told == 0 && i != 1+loop.RepeatNote*len(round) {
				t.Errorf("the model should be told when the third round ends, not at request %d", i+1)
			}
			told++
		}
	}
	if told == 0 {
		t.Error("the model was never told it goes round the same calls")
	}
	if !strings.Contains(r.summary.Error, "same 2 calls, one failing or more, 6 times in a row") ||
		!strings.Contains(r.summary.Error, "same fix") || !strings.Contains(r.summary.Error, "python3 fix.py") {
		t.Errorf("the summary should name the round: %q", r.summary.Error)
	}
}

// The terminal a person watches: a diff under each edit (a new file's first lines), the last lines of a command that failed, a checkpoint in
// a few words (not its JSON), a check that ran out of time said to have timed out (not "exit -1").
func TestTheProgressLinesShowWhatHappened(t *testing.T) {
	edit := looptest.Call{Name: "sandbox_edit_file", Args: looptest.Args(map[string]string{"path": "ok.txt", "old_text": "ok\n", "new_text": "fine\n"})}
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{writeOK}}, looptest.Step{Calls: []looptest.Call{edit}},
		looptest.Step{Calls: []looptest.Call{command("echo first; echo 'boom: the last words' >&2; exit 3")}},
		looptest.Step{Content: "done"})
	r := runAgent(t, model, "", nil, goal("-verify", "sleep 30", "-verify-timeout", "1s", "-max-turns", "4")...)
	for _, want := range []string{"        | +ok\n", "        | -ok", "        | +fine", "exit 3", "        | boom: the last words", "sandbox_checkpoint agent: before verify 1  cp-1", "verify \"sleep 30\"  timed out"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the progress should show %q", want)
		}
	}
	if strings.Contains(r.stderr, `{"id":"cp-1"`) || strings.Contains(r.stderr, "exit -1") {
		t.Errorf("no JSON and no exit -1 in the progress lines")
	}
}

// A check that ran out of time is said to have: to the model (not "status -1"), in the summary and its JSON, and in
// the note a later run reads.
func TestATimedOutCheckIsSaidToHaveTimedOut(t *testing.T) {
	model := looptest.New(t, looptest.Step{Content: "done"}, looptest.Step{Content: "done", Check: func(t testing.TB, req looptest.Request) {
		if s := lastUser(req); !strings.Contains(s, "`sleep 30` ran out of time and was killed") || strings.Contains(s, "status -1") {
			t.Errorf("the model should be told the check timed out:\n%s", s)
		}
	}})
	r := runAgent(t, model, "", nil, goal("-verify", "sleep 30", "-verify-timeout", "1s", "-max-turns", "2")...)
	r.want(t, exitNotMet, loop.OutcomeNotMet, loop.StopMaxTurns)
	if len(model.Requests()) != 2 || r.summary.LastVerify == nil || !r.summary.LastVerify.TimedOut {
		t.Errorf("the summary should say the check timed out: %+v", r.summary.LastVerify)
	}
	if !strings.Contains(r.stdout, "verify       timed out (-verify-timeout) after ") || strings.Contains(r.stdout, "exit -1") {
		t.Errorf("the printed summary should say the check timed out")
	}
	notes, _ := filepath.Glob(filepath.Join(filepath.Dir(r.workspace), "memory", "*", "notes.jsonl"))
	if len(notes) != 1 {
		t.Fatalf("want one notes file: %v", notes)
	}
	if b, _ := os.ReadFile(notes[0]); !strings.Contains(string(b), "the check `sleep 30` (timed out)") {
		t.Errorf("the note should say the check timed out: %s", b)
	}
}

// The model's text shows as it streams, line by line, before the turn's progress line.
func TestTheModelsTextShowsAsItStreams(t *testing.T) {
	model := looptest.New(t, looptest.Step{Content: "I will write ok.txt.\nThen check it.", Calls: []looptest.Call{writeOK}},
		looptest.Step{Content: "done"})
	r := runAgent(t, model, "", nil, goal(verifyOK...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	text, turn := strings.Index(r.stderr, "        > I will write ok.txt.\n        > Then check it.\n"), strings.Index(r.stderr, "turn 1  model")
	if text < 0 || turn < text {
		t.Errorf("the text should show as it streams, before the turn's line")
	}
}
