package openaichat

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
)

func TestAStreamedAnswerShowsItsProgressAndIsAssembled(t *testing.T) {
	server := looptest.New(t, looptest.Step{Content: "héllo wörld, at length", Reasoning: "think", ChunkDelay: 150 * time.Millisecond,
		Calls: []looptest.Call{{Name: "f", Args: `{"a":"b"}`}, {Name: "g", Args: `{}`}}, PromptTokens: 7, CompletionTokens: 3})
	var mu sync.Mutex
	var lines []string
	m, err := New(Config{Model: "scripted", BaseURL: server.BaseURL, RequestTimeout: time.Second, ProgressEvery: 300 * time.Millisecond,
		OnProgress: func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := m.Complete(context.Background(), []loop.Message{{Role: loop.RoleUser, Content: "hi"}}, []loop.Tool{{Name: "f", InputSchema: []byte(`{"type":"object"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	msg := reply.Message
	if msg.Content != "héllo wörld, at length" || msg.Reasoning != "think" || msg.ReasoningField != "reasoning_content" || len(msg.ToolCalls) != 2 ||
		msg.ToolCalls[0] != (loop.ToolCall{ID: "call_1_1", Name: "f", Arguments: `{"a":"b"}`}) || msg.ToolCalls[1].Arguments != "{}" {
		t.Errorf("reply assembled from the chunks: %+v", msg)
	}
	if reply.Usage != (loop.Usage{PromptTokens: 7, CompletionTokens: 3}) || reply.FinishReason != "tool_calls" {
		t.Errorf("usage %+v, finish %q", reply.Usage, reply.FinishReason)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], "answer arriving") {
		t.Errorf("a slow answer should show its progress: %q", lines)
	}
}

func TestRetryAfterIsObeyedAndCapped(t *testing.T) {
	m, _ := New(Config{Model: "m", BaseURL: "http://x/v1", MaxRetryDelay: 3 * time.Second})
	for _, c := range []struct {
		header map[string]string
		want   time.Duration
	}{
		{map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After": "120"}, 3 * time.Second}, // capped
	} {
		h := make(map[string][]string)
		for k, v := range c.header {
			h[k] = []string{v}
		}
		if got := m.backoff(1, retryAfter(h)); got != c.want {
			t.Errorf("%v: wait %v, want %v", c.header, got, c.want)
		}
	}
	for n := 1; n <= 12; n++ {
		if d := m.backoff(n, 0); d <= 0 || d > 3*time.Second {
			t.Errorf("retry %d waits %v: want (0, 3s]", n, d)
		}
	}
}
