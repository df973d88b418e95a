package main

import (
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// The agent against the behaviours of real OpenAI-compatible servers, played by the scripted model (its
// providers.go has their bodies and rules); the sandbox is the real servers, in-process. Each test runs the whole
// command and checks that the run goes on where it should, or ends with the documented exit status and the
// provider's own words.

// done is the model's last word after writing ok.txt; verifyOK checks it.
var (
	writeOK  = write("ok.txt", "ok\n")
	verifyOK = []string{"-verify", "grep -qx ok ok.txt"}
)

func goal(args ...string) []string { return append([]string{"-goal", "write ok.txt"}, args...) }

// lastUser is the text of the last user message of req (a note of the loop's, a check's failure).
func lastUser(req looptest.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Text()
		}
	}
	return ""
}

func TestDeepSeekThinkingIsReplayed(t *testing.T) {
	model := looptest.New(t,
		looptest.Step{Reasoning: "The goal wants ok.txt; I will write it.", Calls: []looptest.Call{writeOK}},
		looptest.Step{Reasoning: "Now check it.", Calls: []looptest.Call{command("cat ok.txt")}},
		looptest.Step{Reasoning: "It is there.", Content: "ok.txt is written."},
	)
	model.Rules = []looptest.Rule{looptest.ReasoningReplayed}
	r := runAgent(t, model, "", nil, goal(verifyOK...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	reqs := model.Requests()
	if len(reqs) != 3 || *reqs[2].Messages[2].ReasoningContent != "The goal wants ok.txt; I will write it." {
		t.Errorf("the reasoning should go back in reasoning_content: %d requests", len(reqs))
	}
	var kept int
	for _, ev := range r.events {
		if ev.Type == "model" && ev.Message.Reasoning != "" && ev.Message.ReasoningField == "reasoning_content" {
			kept++
		}
	}
	if kept != 3 {
		t.Errorf("the transcript should keep each turn's reasoning: %d of 3", kept)
	}
}

func TestOpenRouterReasoningGoesBackInItsOwnField(t *testing.T) {
	model := looptest.New(t,
		looptest.Step{Reasoning: "thinking", ReasoningField: "reasoning", Calls: []looptest.Call{writeOK}},
		looptest.Step{Content: "done", Check: func(t testing.TB, req looptest.Request) {
			if m := req.Messages[2]; m.Reasoning == nil || *m.Reasoning != "thinking" || m.ReasoningContent != nil {
				t.Errorf("reasoning should be replayed as \"reasoning\": %s", req.Raw)
			}
		}},
	)
	runAgent(t, model, "", nil, goal(verifyOK...)...).want(t, exitMet, loop.OutcomeMet, loop.StopDone)
}

func TestDuplicateToolCallIDsAreMadeUnique(t *testing.T) {
	// A server that numbers each turn's calls from 1, and one that repeats an ID within a turn.
	model := looptest.New(t,
		looptest.Step{IDs: []string{"call_0", "call_0"}, Calls: []looptest.Call{writeOK, command("true")}},
		looptest.Step{IDs: []string{"call_0"}, Calls: []looptest.Call{command("cat ok.txt")}},
		looptest.Step{Content: "done"},
	)
	model.Rules = []looptest.Rule{looptest.UniqueToolCallIDs}
	r := runAgent(t, model, "", nil, goal(verifyOK...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	last := model.Requests()[2]
	ids := map[string]bool{}
	for _, m := range toolMessages(last) {
		ids[m.ToolCallID] = true
	}
	if len(ids) != 3 || last.Messages[2].ToolCalls[1].ID != last.Messages[4].ToolCallID {
		t.Errorf("want 3 distinct IDs, each answer naming its call: %s", last.Raw)
	}
}

func TestBrokenAnswersAreRetried(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		bad  looptest.Step
		args []string
	}{
		{"reset in a stream", looptest.Step{Calls: []looptest.Call{writeOK}, CutAfter: 300}, nil},
		{"short JSON body", looptest.Step{Calls: []looptest.Call{writeOK}, CutAfter: 50}, nil},
		{"stall in a stream", looptest.Step{Calls: []looptest.Call{writeOK}, StallAfter: 300}, []string{"-model-timeout", "1s"}},
		{"stream ends without a finish", looptest.Step{Calls: []looptest.Call{writeOK}, NoFinish: true, NoDone: true}, nil},
		{"200 with an error body", looptest.OpenRouterUpstreamError, nil},
		{"error mid-stream", looptest.Step{Content: "Let me", StreamError: "Provider disconnected"}, nil},
		{"no choices", looptest.Step{NoChoices: true}, nil},
		{"finish_reason error", looptest.Step{Content: "partial", FinishReason: "error"}, nil},
		{"overloaded", looptest.DeepSeekBusy, nil},
		{"rate limit with Retry-After", looptest.GroqRateLimit, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			model := looptest.New(t, c.bad, looptest.Step{Calls: []looptest.Call{writeOK}}, looptest.Step{Content: "done"})
			if c.name == "short JSON body" {
				model.NoStream = true
			}
			start := time.Now()
			r := runAgent(t, model, "", nil, goal(append(c.args, verifyOK...)...)...)
			r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
			if n := len(model.Requests()); n != 3 {
				t.Errorf("want the broken answer, its retry and the last turn: %d requests", n)
			}
			if !strings.Contains(r.stderr, "; retry 1 in ") {
				t.Errorf("the retry should show in the progress")
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestStreamingBoundsSilenceNotLength(t *testing.T) {
	t.Parallel()
	// 12 chunks 300 ms apart: 3.6 s of answer, never silent for the 1 s model timeout.
	model := looptest.New(t,
		looptest.Step{Content: "I will write the file now, in one call.", Calls: []looptest.Call{writeOK}, ChunkDelay: 300 * time.Millisecond,
			KeepAlive: "OPENROUTER PROCESSING"},
		looptest.Step{Content: "done", NoDone: true}, // a server that never sends [DONE]
	)
	r := runAgent(t, model, "", nil, goal(append([]string{"-model-timeout", "1s"}, verifyOK...)...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	reqs := model.Requests()
	if len(reqs) != 2 || !reqs[0].Stream || !reqs[1].Stream {
		t.Errorf("both answers should stream, once each: %d requests", len(reqs))
	}
}

func TestAServerThatDoesNotStreamIsDetectedOnce(t *testing.T) {
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{writeOK}}, looptest.Step{Content: "done"})
	model.NoStream = true
	r := runAgent(t, model, "", nil, goal(verifyOK...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	reqs := model.Requests()
	if len(reqs) != 2 || !reqs[0].Stream || reqs[1].Stream {
		t.Errorf("the first request asks for a stream, the second not: %d requests", len(reqs))
	}
	if strings.Count(r.stderr, "does not stream") != 1 {
		t.Errorf("the person should be told once")
	}
}

func TestErrorsThatCannotHealAreNotRetried(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		step        looptest.Step
		kind, words string
		hint        string
	}{
		{"OpenAI quota", looptest.OpenAIQuota, loop.FailQuota, "You exceeded your current quota", "out of quota"},
		{"OpenAI key", looptest.OpenAIInvalidKey, loop.FailAuth, "Incorrect API key provided", "OPENAI_API_KEY"},
		{"OpenAI model", looptest.OpenAIModelNotFound, loop.FailModelNotFound, "does not exist or you do not have access", "check -model"},
		{"DeepSeek balance", looptest.DeepSeekInsufficientBalance, loop.FailQuota, "Insufficient Balance", "out of quota"},
		{"DeepSeek auth", looptest.DeepSeekAuth, loop.FailAuth, "Authentication Fails", "OPENAI_API_KEY"},
		{"Ollama model", looptest.OllamaModelNotFound, loop.FailModelNotFound, "not found, try pulling it first", "ollama pull scripted"},
		{"OpenRouter credits", looptest.OpenRouterNoCredits, loop.FailQuota, "Insufficient credits", "out of quota"},
		{"wrong URL", looptest.Step{Status: 404, Body: "404 page not found"}, loop.FailBadRequest, "404 page not found", "API root"},
		{"a web page", looptest.Step{Status: 200, Body: "<html><title>Open WebUI</title></html>"}, loop.FailBadRequest, "Open WebUI", "API root"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			model := looptest.New(t)
			model.Repeat = &c.step
			r := runAgent(t, model, "", nil, goal()...)
			r.want(t, exitError, loop.OutcomeError, loop.StopModelError)
			if n := len(model.Requests()); n != 1 {
				t.Errorf("%d requests: an error that cannot heal should not be retried", n)
			}
			me := r.summary.ModelError
			if me == nil || me.Kind != c.kind || !strings.Contains(me.Message, c.words) || !strings.Contains(me.Hint, c.hint) {
				t.Fatalf("summary's model error = %+v; want kind %s, %q, hint with %q", me, c.kind, c.words, c.hint)
			}
			if !strings.Contains(r.stderr, c.words) || !strings.Contains(r.stdout, c.words) || !strings.Contains(r.stdout, c.hint) {
				t.Errorf("the provider's words and the hint should reach the person")
			}
		})
	}
}

func TestAServerFailingForTheWholeWindowEndsTheRun(t *testing.T) {
	t.Parallel()
	model := looptest.New(t)
	model.Repeat = &looptest.OpenAIServerError
	start := time.Now()
	r := runAgent(t, model, "", nil, goal("-retry-window", "4s")...)
	r.want(t, exitError, loop.OutcomeError, loop.StopModelError)
	if d := time.Since(start); d > 6*time.Second || len(model.Requests()) < 3 {
		t.Errorf("want retries for about the 4 s window: %d requests in %v", len(model.Requests()), d)
	}
	if !strings.Contains(r.summary.Error, "The server had an error while processing your request") || !strings.Contains(r.stderr, "retry window") {
		t.Errorf("error = %q", r.summary.Error)
	}
}

func TestAProviderFailingAfterTheWorkStillVerifies(t *testing.T) {
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{writeOK}})
	model.Repeat = &looptest.OpenAIQuota
	r := runAgent(t, model, "", nil, goal(verifyOK...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopModelError)
	if !strings.Contains(r.summary.Error, "You exceeded your current quota") || r.summary.VerifyRuns != 1 {
		t.Errorf("the provider's failure should stay in the summary: %+v", r.summary)
	}
}

func TestOllamaWithoutToolsSwitchesToTextCalls(t *testing.T) {
	model := looptest.New(t,
		looptest.Step{Content: looptest.Hermes("I will write the file.", writeOK)},
		looptest.Step{Content: looptest.Hermes("", command("cat ok.txt")), Check: func(t testing.TB, req looptest.Request) {
			if len(req.Tools) != 0 || !strings.Contains(req.Messages[0].Text(), "<tool_call>") || !strings.Contains(req.Messages[0].Text(), protocol.ToolWriteFile) {
				t.Errorf("the text mode sends no tools and describes them in the system prompt")
			}
			if a := req.Messages[2]; a.Role != "assistant" || !strings.Contains(a.Text(), `<tool_call>`) || len(a.ToolCalls) != 0 {
				t.Errorf("the call should be replayed as text: %s", req.Raw)
			}
			if u := req.Messages[3]; u.Role != "user" || !strings.HasPrefix(u.Text(), "<tool_response>") || !strings.Contains(u.Text(), "bytes_written") {
				t.Errorf("the result should come back as a user message in <tool_response>: %s", req.Raw)
			}
		}},
		looptest.Step{Content: "ok.txt holds ok."},
	)
	model.Rules = []looptest.Rule{looptest.NoTools, looptest.NoToolMessages}
	r := runAgent(t, model, "", nil, goal(verifyOK...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if !strings.Contains(r.stderr, "does not support tools") {
		t.Errorf("the switch should show with the server's words")
	}
	if r.summary.ToolCalls != 2 || r.summary.ModelError != nil {
		t.Errorf("summary = %+v", r.summary)
	}
}

func TestCallsWrittenInContentAreRunInToolMode(t *testing.T) {
	model := looptest.New(t,
		looptest.Step{Content: "```json\n" + `{"name": "sandbox_write_file", "arguments": {"path": "ok.txt", "content": "ok\n"}}` + "\n```"},
		looptest.Step{Content: looptest.Hermes("Checking.", command("cat ok.txt"))},
		looptest.Step{Content: `Done. The file holds {"name": "ok"} style JSON.`},
	)
	r := runAgent(t, model, "", nil, goal(verifyOK...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if r.summary.ToolCalls != 2 {
		t.Errorf("a bare JSON call and a Hermes block should both run: %d calls", r.summary.ToolCalls)
	}
	if a := model.Requests()[1].Messages[2]; len(a.ToolCalls) != 1 || a.ToolCalls[0].Function.Name != protocol.ToolWriteFile {
		t.Errorf("in tool mode the call is replayed as a native call: %+v", a)
	}
}

func TestUnreadableRepliesGoBackAndSeveralEndTheRun(t *testing.T) {
	bad := looptest.Step{Content: "<tool_call>\n{\"name\": \"sandbox_write_file\", \"arguments\": {\"path\": \"ok.txt\",\n</tool_call>"}
	model := looptest.New(t, bad, looptest.Step{}, looptest.Step{Content: "I am writing a very long", FinishReason: "length"},
		looptest.Step{Check: func(t testing.TB, req looptest.Request) {
			if !strings.Contains(lastUser(req), "cut off at the output token limit") {
				t.Errorf("a cut reply should be explained: %s", lastUser(req))
			}
		}})
	model.Repeat = &bad
	r := runAgent(t, model, "", nil, goal("-max-format-errors", "5")...)
	r.want(t, exitNotMet, loop.OutcomeNotMet, loop.StopFormatErrors)
	reqs := model.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests", len(reqs))
	}
	if !strings.Contains(lastUser(reqs[1]), "is not a call") || !strings.Contains(lastUser(reqs[2]), "was empty") {
		t.Errorf("the model should be told what was wrong: %q / %q", lastUser(reqs[1]), lastUser(reqs[2]))
	}
	for _, m := range reqs[3].Messages {
		if m.Role == "assistant" && m.Text() == "" && len(m.ToolCalls) == 0 {
			t.Errorf("an empty reply should not be replayed")
		}
	}
	if !strings.Contains(r.summary.Error, "5 model replies in a row could not be used") || !strings.Contains(r.stdout, "is not a call") {
		t.Errorf("the reason should be clear: %q", r.summary.Error)
	}
}

func TestMaxOutputTokensIsSent(t *testing.T) {
	model := looptest.New(t, looptest.Step{Content: "done", Check: func(t testing.TB, req looptest.Request) {
		if req.MaxTokens != 512 || !strings.Contains(string(req.Raw), `"max_tokens":512`) {
			t.Errorf("a compatible server gets max_tokens: %s", req.Raw)
		}
	}})
	runAgent(t, model, "", nil, goal("-max-output-tokens", "512")...).want(t, exitNotMet, loop.OutcomeUnverified, loop.StopDone)
}

func TestGroqToolUseFailedGoesBackToTheModel(t *testing.T) {
	model := looptest.New(t, looptest.GroqToolUseFailed,
		looptest.Step{Calls: []looptest.Call{writeOK}, Check: func(t testing.TB, req looptest.Request) {
			if u := lastUser(req); !strings.Contains(u, "Failed to call a function") || !strings.Contains(u, "<function=sandbox_list_files") {
				t.Errorf("the server's words and the failed generation should reach the model: %s", u)
			}
		}},
		looptest.Step{Content: "done"})
	r := runAgent(t, model, "", nil, goal(verifyOK...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if r.summary.Turns != 3 {
		t.Errorf("the failed generation counts as a turn: %d", r.summary.Turns)
	}
}

func TestContextOverflowShrinksOnceThenStops(t *testing.T) {
	read := looptest.Call{Name: protocol.ToolRunCommand, Args: looptest.Args(protocol.RunCommandInput{Command: "seq 1 3000"})}
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{read}}, looptest.Step{Calls: []looptest.Call{read}},
		looptest.VLLMContextLength, // shrunk and asked again
		looptest.Step{Calls: []looptest.Call{writeOK}, Check: func(t testing.TB, req looptest.Request) {
			if tm := toolMessages(req); !strings.Contains(tm[0].Text(), `"elided"`) {
				t.Errorf("the retry should send a smaller conversation: %.200s", tm[0].Text())
			}
		}},
		looptest.OpenAIContextLength, looptest.OpenAIContextLength)
	r := runAgent(t, model, "", nil, goal(verifyOK...)...)
	// The second overflow in a row ends the run; the work was done, so the check decides.
	r.want(t, exitMet, loop.OutcomeMet, loop.StopModelError)
	if !strings.Contains(r.summary.Error, "maximum context length is 8192 tokens") || len(model.Requests()) != 6 {
		t.Errorf("error %q after %d requests", r.summary.Error, len(model.Requests()))
	}
	if !strings.Contains(r.stderr, "maximum context length is 32768 tokens") {
		t.Errorf("the shrink should show with the server's words")
	}
}

func TestMissingUsageIsEstimatedAndBudgetsHold(t *testing.T) {
	model := looptest.New(t)
	model.Repeat = &looptest.Step{Calls: []looptest.Call{{Name: protocol.ToolListFiles, Args: `{}`}}, NoUsage: true}
	r := runAgent(t, model, "", nil, goal("-max-tokens", "12000")...)
	r.want(t, exitNotMet, loop.OutcomeNotMet, loop.StopMaxTokens)
	// Each request is about 15 KB, about 3 800 tokens estimated: the budget ends the run at turn 4.
	if !r.summary.TokensEstimated || r.summary.Turns < 3 || r.summary.Turns > 5 || !strings.Contains(r.stdout, "estimated") {
		t.Errorf("summary = %+v", r.summary)
	}
}

func TestTheTranscriptStoresEachResultOnce(t *testing.T) {
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{command("seq 1 5")}}, looptest.Step{Content: "done"})
	r := runAgent(t, model, "", nil, goal()...)
	for _, ev := range r.events {
		if ev.Type == "tool" && (ev.Result.Text != "" || ev.Sent != "" || !strings.Contains(string(ev.Result.Structured), `1\n2\n3`)) {
			t.Errorf("the result should be stored once, structured: text %q, sent %q", ev.Result.Text, ev.Sent)
		}
	}
}

func TestToolModeTextFromTheStart(t *testing.T) {
	model := looptest.New(t,
		looptest.Step{Content: looptest.Hermes("", writeOK, command("cat ok.txt"))},
		looptest.Step{Content: "done", Check: func(t testing.TB, req looptest.Request) {
			if u := req.Messages[3]; u.Role != "user" || strings.Count(u.Text(), "<tool_response>") != 2 {
				t.Errorf("both results in one user message: %s", req.Raw)
			}
		}},
	)
	model.Rules = []looptest.Rule{looptest.NoTools, looptest.NoToolMessages}
	r := runAgent(t, model, "", nil, goal(append([]string{"-tool-mode", "text"}, verifyOK...)...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if n := len(model.Requests()); n != 2 {
		t.Errorf("no request should offer tools: %d requests", n)
	}
}

func TestToolModeNativeDoesNotFallBack(t *testing.T) {
	model := looptest.New(t)
	model.Rules = []looptest.Rule{looptest.NoTools}
	r := runAgent(t, model, "", nil, goal("-tool-mode", "native")...)
	r.want(t, exitError, loop.OutcomeError, loop.StopModelError)
	if !strings.Contains(r.stdout, "does not support tools") || !strings.Contains(r.stdout, "-tool-mode text") {
		t.Errorf("the provider's words and the way out should be shown")
	}
}

func TestCachedTokensArePricedAsTheProviderReportsThem(t *testing.T) {
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{writeOK}, PromptTokens: 1_000_000, CompletionTokens: 0},
		looptest.Step{Content: "done", PromptTokens: 1_000_000, CachedTokens: 800_000})
	r := runAgent(t, model, "", nil, goal(append([]string{"-model", "gpt-4.1-mini"}, verifyOK...)...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	// gpt-4.1-mini: $0.40 a million input tokens, $0.10 cached, $1.60 output: 0.40 + (0.2·0.40 + 0.8·0.10) + 10/1e6·1.60.
	if c := r.summary.CostUSD; r.summary.TokensCached != 800_000 || c == nil || *c < 0.55999 || *c > 0.56003 {
		t.Errorf("cached %d, cost %v", r.summary.TokensCached, c)
	}
}

func TestAServerRefusingStreamParametersIsAskedWithout(t *testing.T) {
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{writeOK}}, looptest.Step{Content: "done"})
	model.Rules = []looptest.Rule{func(req looptest.Request) *looptest.Step {
		if req.Stream {
			return &looptest.Step{Status: 400, Body: `{"error":{"message":"Unrecognized request argument supplied: stream_options","type":"invalid_request_error","code":null}}`}
		}
		return nil
	}}
	r := runAgent(t, model, "", nil, goal(verifyOK...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	reqs := model.Requests()
	if len(reqs) != 3 || !reqs[0].Stream || reqs[1].Stream || reqs[2].Stream {
		t.Errorf("one refused stream request, then two without: %d requests", len(reqs))
	}
	if !strings.Contains(r.stderr, "does not stream (Unrecognized request argument supplied: stream_options)") {
		t.Errorf("the person should be told why")
	}
}

func TestAServerRefusingReasoningBackIsAskedWithout(t *testing.T) {
	model := looptest.New(t,
		looptest.Step{Reasoning: "plan", ReasoningField: "reasoning", Calls: []looptest.Call{writeOK}},
		looptest.Step{Reasoning: "check", ReasoningField: "reasoning", Content: "done"})
	model.Rules = []looptest.Rule{looptest.NoReasoningField}
	r := runAgent(t, model, "", nil, goal(verifyOK...)...)
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if n := len(model.Requests()); n != 3 || !strings.Contains(r.stderr, "property 'reasoning' is unsupported") {
		t.Errorf("one refused request, then one without the field: %d requests", n)
	}
	if r.events[3].Message.Reasoning != "plan" {
		t.Errorf("the transcript keeps the reasoning all the same")
	}
}

// A model server that never answered is named at once: a refused connection is a wrong URL or a server not
// started, and a minute of retries would only hide that (with the default -retries and -retry-window).
func TestNothingListeningIsNamed(t *testing.T) {
	var stdout, stderr strings.Builder
	dir := t.TempDir()
	code := run(t.Context(), []string{"-goal", "x", "-workspace", dir + "/ws", "-runs-dir", dir + "/runs"},
		map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitError || !strings.Contains(stdout.String(), "nothing answered at http://127.0.0.1:1/v1") ||
		!strings.Contains(stderr.String(), "connection refused") || strings.Contains(stderr.String(), "retry 1") {
		t.Errorf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
