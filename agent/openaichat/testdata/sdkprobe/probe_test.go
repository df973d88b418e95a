// Package sdkprobe measures what github.com/openai/openai-go (the design's package) does with the answers
// providers send that the agent's adapter (openaichat) was built for, side by side, against the scripted server.
// It is a module of its own, outside the workspace, so the agent does not depend on the SDK to keep the figure:
//
//	cd agent/openaichat/testdata/sdkprobe && GOWORK=off go test -v
//
// It fails when the SDK no longer does what docs/agent.md ("The adapter speaks HTTP itself") says it does: the
// decision is then to be made again.
package sdkprobe

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/agent/openaichat"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

var (
	writeOK = looptest.Call{Name: "sandbox_write_file", Args: `{"path":"ok.txt","content":"ok\n"}`}
	catOK   = looptest.Call{Name: "sandbox_run_command", Args: `{"command":"cat ok.txt"}`}
)

// outcome is what a client made of one answer: its calls (name, arguments, what else came with each), or its error.
type outcome struct {
	calls   []string
	content string
	err     error
}

func (o outcome) String() string {
	if o.err != nil {
		return "error: " + o.err.Error()
	}
	if len(o.calls) == 0 {
		return "text " + o.content
	}
	return strings.Join(o.calls, " | ")
}

// viaSDK streams one answer through the SDK and its ChatCompletionAccumulator, allowed one retry as the adapter is.
func viaSDK(t *testing.T, step looptest.Step, timeout time.Duration) outcome {
	s := looptest.New(t, step)
	s.Repeat = &looptest.Step{Calls: []looptest.Call{writeOK}}
	c := openai.NewClient(option.WithBaseURL(s.BaseURL+"/"), option.WithAPIKey("x"), option.WithMaxRetries(1), option.WithRequestTimeout(timeout))
	st := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "scripted", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go")}})
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		return outcome{err: err}
	}
	var o outcome
	for _, tc := range acc.Choices[0].Message.ToolCalls {
		extra := ""
		if strings.Contains(tc.RawJSON(), "extra_content") {
			extra = " +extra_content"
		}
		o.calls = append(o.calls, tc.Function.Name+" "+tc.Function.Arguments+extra)
	}
	o.content = acc.Choices[0].Message.Content
	return o
}

// viaAdapter asks the same through the agent's own adapter.
func viaAdapter(t *testing.T, step looptest.Step, timeout time.Duration) outcome {
	s := looptest.New(t, step)
	s.Repeat = &looptest.Step{Calls: []looptest.Call{writeOK}}
	m, err := openaichat.New(openaichat.Config{Model: "scripted", BaseURL: s.BaseURL, MaxRetries: 1, RequestTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Complete(context.Background(), []loop.Message{{Role: loop.RoleUser, Content: "go"}}, nil)
	if err != nil {
		return outcome{err: err}
	}
	var o outcome
	for _, tc := range r.Message.ToolCalls {
		extra := ""
		if len(tc.Extra) > 0 {
			extra = " +extra_content"
		}
		o.calls = append(o.calls, tc.Name+" "+tc.Arguments+extra)
	}
	o.content = r.Message.Content
	return o
}

func TestSDKBesideTheAdapter(t *testing.T) {
	one := writeOK.Name + " " + writeOK.Args
	two := []string{one, catOK.Name + " " + catOK.Args}
	cases := []struct {
		name    string
		step    looptest.Step
		timeout time.Duration
		want    string // what the agent needs (a broken answer retried: the next one, one call)
		sdk     string // what the SDK gives, as measured
	}{
		{"a name repeated in every chunk (MiniMax on NIM, Kimi on Fireworks)", looptest.NameInEveryChunk(writeOK), time.Minute,
			one, "sandbox_write_filesandbox_write_filesandbox_write_file " + writeOK.Args},
		{"two calls, no index, no ids (proxies)", looptest.NoIndexCalls("", writeOK, catOK), time.Minute,
			strings.Join(two, " | "), "sandbox_write_filesandbox_run_command " + writeOK.Args + catOK.Args},
		{"two calls, no index, equal ids", looptest.NoIndexCalls("call_0", writeOK, catOK), time.Minute,
			strings.Join(two, " | "), "sandbox_write_filesandbox_run_command " + writeOK.Args + catOK.Args},
		{"Gemini 3's thought signatures", looptest.GeminiSignedCalls("SIG==", writeOK, catOK), time.Minute,
			two[0] + " +extra_content | " + two[1] + " +extra_content", strings.Join(two, " | ")},
		{"a stream reset after the headers", looptest.Step{Calls: []looptest.Call{writeOK}, CutAfter: 300}, time.Minute,
			one, "error: "},
		{"a stream ending before its finish", looptest.Step{Content: "I am writing a", NoFinish: true, NoDone: true}, time.Minute,
			one, "text I am writing a"},
		{"a slow answer, pieces 400 ms apart, 1 s timeout", looptest.Step{ChunkDelay: 400 * time.Millisecond, Content: "a slow answer"}, time.Second,
			"text a slow answer", "error: "},
	}
	sdkWrong := 0
	for _, c := range cases {
		sdk, own := viaSDK(t, c.step, c.timeout), viaAdapter(t, c.step, c.timeout)
		t.Logf("%s\n  needed:  %s\n  SDK:     %s\n  adapter: %s", c.name, c.want, sdk, own)
		if own.String() != c.want {
			t.Errorf("%s: the adapter gives %s", c.name, own)
		}
		if !strings.HasPrefix(sdk.String(), c.sdk) {
			t.Errorf("%s: the SDK no longer gives what docs/agent.md says (%s): %s", c.name, c.sdk, sdk)
		}
		if sdk.String() != c.want {
			sdkWrong++
		}
	}
	t.Logf("the SDK gives a wrong answer in %d of %d cases; the adapter in none", sdkWrong, len(cases))
}
