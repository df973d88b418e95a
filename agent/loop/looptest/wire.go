package looptest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"
)

// answer writes st as the response: an error body, one JSON completion, or a stream of chunks, each through a
// writer that can cut or stall the body part-way.
func answer(w http.ResponseWriter, r *http.Request, n int, model string, st Step, stream bool) {
	bw := &bodyWriter{w: w, r: r, cutAfter: st.CutAfter, stallAfter: st.StallAfter}
	switch {
	case st.Status != 0 || st.Body != "":
		status, body := st.Status, st.Body
		status = cmp.Or(status, http.StatusOK)
		if body == "" {
			body = fmt.Sprintf(`{"error":{"message":"scripted failure %d","type":"server_error"}}`, status)
		}
		bw.whole(status, "application/json", []byte(body))
	case st.StreamError != "" && !stream:
		bw.whole(http.StatusOK, "application/json", []byte(fmt.Sprintf(`{"error":{"code":502,"message":%q}}`, st.StreamError)))
	case !stream:
		b, _ := json.Marshal(completion(n, model, st))
		bw.whole(http.StatusOK, "application/json", append(b, '\n'))
	default:
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		bw.flush()
		if !keepAlive(bw, st) {
			return
		}
		for _, ev := range chunks(n, model, st) {
			if st.ChunkDelay > 0 {
				select {
				case <-time.After(st.ChunkDelay):
				case <-r.Context().Done():
					return
				}
			}
			if st.KeepAlive != "" {
				ev = ": " + st.KeepAlive + "\n\n" + ev
			}
			if !bw.write([]byte(ev)) {
				return
			}
		}
	}
}

// keepAlive sends comment lines for st.KeepAliveFor; false means the client hung up.
func keepAlive(bw *bodyWriter, st Step) bool {
	comment := ": " + cmp.Or(st.KeepAlive, "keep-alive") + "\n\n"
	for end := time.Now().Add(st.KeepAliveFor); time.Now().Before(end); {
		select {
		case <-time.After(100 * time.Millisecond):
		case <-bw.r.Context().Done():
			return false
		}
		if !bw.write([]byte(comment)) {
			return false
		}
	}
	return true
}

// bodyWriter writes a body, flushing as it goes, and plays a broken connection: after cutAfter bytes it resets the
// connection, after stallAfter bytes it goes silent until the client hangs up.
type bodyWriter struct {
	w                    http.ResponseWriter
	r                    *http.Request
	cutAfter, stallAfter int
	sent                 int
}

func (b *bodyWriter) whole(status int, contentType string, body []byte) {
	b.w.Header().Set("Content-Type", contentType)
	// The full length is declared, so a cut body is a short one to the client, not a complete smaller one.
	b.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	b.w.WriteHeader(status)
	b.write(body)
}

// write sends p, or the part of it before a cut or a stall; false means the body ended there.
func (b *bodyWriter) write(p []byte) bool {
	limit, cut := len(p), false
	if b.cutAfter > 0 && b.sent+limit >= b.cutAfter {
		limit, cut = b.cutAfter-b.sent, true
	}
	stall := false
	if b.stallAfter > 0 && b.sent+limit >= b.stallAfter {
		limit, cut, stall = b.stallAfter-b.sent, false, true
	}
	_, _ = b.w.Write(p[:limit])
	b.sent += limit
	b.flush()
	switch {
	case cut:
		b.reset()
		return false
	case stall:
		select {
		case <-b.r.Context().Done():
		case <-time.After(2 * time.Minute):
		}
		return false
	}
	return true
}

func (b *bodyWriter) flush() {
	if f, ok := b.w.(http.Flusher); ok {
		f.Flush()
	}
}

// reset closes the connection with a TCP reset (linger 0), as a proxy or a crashed server does.
func (b *bodyWriter) reset() {
	hj, ok := b.w.(http.Hijacker)
	if !ok {
		panic("looptest: the response cannot be hijacked to cut it")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// toolCalls are st's calls on the wire, with their IDs.
func toolCalls(n int, st Step) []map[string]any {
	var calls []map[string]any
	for i, c := range st.Calls {
		id := "call_" + strconv.Itoa(n+1) + "_" + strconv.Itoa(i+1)
		switch {
		case st.NoIDs:
			id = ""
		case i < len(st.IDs):
			id = st.IDs[i]
		}
		calls = append(calls, map[string]any{
			"id": id, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Args},
		})
	}
	return calls
}

func finishReason(st Step) string {
	switch {
	case st.FinishReason != "":
		return st.FinishReason
	case len(st.Calls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func reasoningField(st Step) string {
	if st.ReasoningField != "" {
		return st.ReasoningField
	}
	return "reasoning_content"
}

func usage(st Step) map[string]any {
	in, out := st.PromptTokens, st.CompletionTokens
	if in == 0 && out == 0 {
		in, out = 100, 10
	}
	u := map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
	if st.CachedTokens > 0 {
		u["prompt_tokens_details"] = map[string]any{"cached_tokens": st.CachedTokens}
		u["prompt_cache_hit_tokens"] = st.CachedTokens
	}
	return u
}

func completion(n int, model string, st Step) map[string]any {
	msg := map[string]any{"role": "assistant", "content": st.Content}
	if st.Reasoning != "" {
		msg[reasoningField(st)] = st.Reasoning
	}
	if calls := toolCalls(n, st); len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	choices := []map[string]any{{"index": 0, "message": msg, "finish_reason": finishReason(st)}}
	if st.NoChoices {
		choices = []map[string]any{}
	}
	out := map[string]any{
		"id": "chatcmpl-" + strconv.Itoa(n+1), "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": choices,
	}
	if !st.NoUsage {
		out["usage"] = usage(st)
	}
	return out
}

// chunks is st as server-sent events, split the way real servers split an answer: the role first, thinking and
// text in pieces, each tool call's name in one chunk and its arguments over two, then the finish reason, the usage
// in a chunk of its own with no choices (stream_options.include_usage), and [DONE].
func chunks(n int, model string, st Step) []string {
	var out []string
	add := func(delta map[string]any, finish any) {
		c := map[string]any{"id": "chatcmpl-" + strconv.Itoa(n+1), "object": "chat.completion.chunk", "created": time.Now().Unix(),
			"model": model, "choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}}
		b, _ := json.Marshal(c)
		out = append(out, "data: "+string(b)+"\n\n")
	}
	switch {
	case len(st.Chunks) > 0:
		for _, c := range st.Chunks {
			out = append(out, "data: "+c+"\n\n")
		}
	case st.NoChoices:
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-" + strconv.Itoa(n+1), "object": "chat.completion.chunk", "model": model, "choices": []any{}})
		out = append(out, "data: "+string(b)+"\n\n")
	default:
		add(map[string]any{"role": "assistant", "content": ""}, nil)
		for _, piece := range halves(st.Reasoning) {
			add(map[string]any{reasoningField(st): piece}, nil)
		}
		for _, piece := range halves(st.Content) {
			add(map[string]any{"content": piece}, nil)
		}
		for i, c := range toolCalls(n, st) {
			fn := c["function"].(map[string]any)
			args := fn["arguments"].(string)
			add(map[string]any{"tool_calls": []map[string]any{{"index": i, "id": c["id"], "type": "function",
				"function": map[string]any{"name": fn["name"], "arguments": ""}}}}, nil)
			for _, piece := range halves(args) {
				add(map[string]any{"tool_calls": []map[string]any{{"index": i, "function": map[string]any{"arguments": piece}}}}, nil)
			}
		}
		if st.StreamError != "" {
			b, _ := json.Marshal(map[string]any{"id": "chatcmpl-" + strconv.Itoa(n+1), "object": "chat.completion.chunk", "model": model,
				"error":   map[string]any{"code": "server_error", "message": st.StreamError},
				"choices": []map[string]any{{"index": 0, "delta": map[string]any{"content": ""}, "finish_reason": "error"}}})
			return append(out, "data: "+string(b)+"\n\n")
		}
		if !st.NoFinish {
			add(map[string]any{}, finishReason(st))
		}
	}
	if !st.NoUsage {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-" + strconv.Itoa(n+1), "object": "chat.completion.chunk", "model": model,
			"choices": []any{}, "usage": usage(st)})
		out = append(out, "data: "+string(b)+"\n\n")
	}
	if !st.NoDone {
		out = append(out, "data: [DONE]\n\n")
	}
	return out
}

// halves splits s in two pieces (none when it is empty), so every field is reassembled from parts.
func halves(s string) []string {
	if s == "" {
		return nil
	}
	h := len(s) / 2
	for h > 0 && h < len(s) && s[h]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		h--
	}
	if h == 0 {
		return []string{s}
	}
	return []string{s[:h], s[h:]}
}
