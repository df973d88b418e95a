package agents

import (
	"encoding/json"
	"net/http"
)

// OpenAI Chat Completions (Qwen Code, opencode): messages; a tool result is a message of role tool (its content a
// string or a list of parts); a client may add the images in a user message after it.

func readChat(req map[string]any) Request {
	rec := Request{API: "chat"}
	for _, t := range list(req["tools"]) {
		rec.Tools = append(rec.Tools, str(obj(obj(t)["function"])["name"]))
	}
	for _, mv := range list(req["messages"]) {
		msg := obj(mv)
		switch str(msg["role"]) {
		case "system":
			rec.System += chatText(msg["content"])
		case "tool":
			seen := Seen{Text: chatText(msg["content"])}
			seen.Images = chatImages(msg["content"])
			rec.Results = append(rec.Results, seen)
		case "user":
			if n := len(rec.Results); n > 0 {
				rec.Results[n-1].Images = append(rec.Results[n-1].Images, chatImages(msg["content"])...)
			}
		}
	}
	return rec
}

func chatText(c any) string {
	if s, ok := c.(string); ok {
		return s
	}
	t := ""
	for _, p := range list(c) {
		t += str(obj(p)["text"])
	}
	return t
}

func chatImages(c any) []Image {
	var imgs []Image
	for _, p := range list(c) {
		if img, ok := dataURL(str(obj(obj(p)["image_url"])["url"])); ok {
			imgs = append(imgs, img)
		}
	}
	return imgs
}

func answerChat(w http.ResponseWriter, call *Call, name, id string, stream bool) {
	msg := map[string]any{"role": "assistant", "content": Final}
	finish := "stop"
	if call != nil {
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": id, "type": "function", "function": map[string]any{"name": name, "arguments": argsJSON(call)}}}}
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
	if !stream {
		writeJSON(w, map[string]any{"id": "chat_" + id, "object": "chat.completion", "created": 0, "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	send := sse(w)
	base := map[string]any{"id": "chat_" + id, "object": "chat.completion.chunk", "created": 0, "model": "scripted"}
	chunk := func(choice map[string]any, extra map[string]any) map[string]any {
		c := map[string]any{"choices": []any{choice}}
		for k, v := range base {
			c[k] = v
		}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	send("", chunk(map[string]any{"index": 0, "delta": msg, "finish_reason": nil}, nil))
	send("", chunk(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}, map[string]any{"usage": usage}))
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// jsonText is a value as the model reads it: a string as it is, anything else as JSON.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}
