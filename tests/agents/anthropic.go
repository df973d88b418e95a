package agents

import "net/http"

// Anthropic Messages (Claude Code): messages of content blocks; a tool result is a tool_result block (content a
// string or text and image blocks, is_error). Claude Code streams.

func readAnthropic(req map[string]any) Request {
	rec := Request{API: "anthropic"}
	if s, ok := req["system"].(string); ok {
		rec.System = s
	}
	for _, b := range list(req["system"]) {
		rec.System += str(obj(b)["text"])
	}
	for _, t := range list(req["tools"]) {
		rec.Tools = append(rec.Tools, str(obj(t)["name"]))
	}
	for _, mv := range list(req["messages"]) {
		for _, bv := range list(obj(mv)["content"]) {
			b := obj(bv)
			if str(b["type"]) != "tool_result" {
				continue
			}
			seen := Seen{Error: b["is_error"] == true}
			if s, ok := b["content"].(string); ok {
				seen.Text = s
			}
			for _, cv := range list(b["content"]) {
				c := obj(cv)
				switch str(c["type"]) {
				case "text":
					seen.Text += str(c["text"])
				case "image":
					src := obj(c["source"])
					seen.Images = append(seen.Images, Image{MIME: str(src["media_type"]), Base64: str(src["data"])})
				}
			}
			rec.Results = append(rec.Results, seen)
		}
	}
	return rec
}

func answerAnthropic(w http.ResponseWriter, call *Call, name, id string, stream bool) {
	var block map[string]any
	stop := "end_turn"
	if call != nil {
		block, stop = map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": name, "input": call.Args}, "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": Final}
	}
	usage := map[string]any{"input_tokens": 10, "output_tokens": 10}
	msg := map[string]any{"id": "msg_" + id, "type": "message", "role": "assistant", "model": "scripted", "content": []any{block},
		"stop_reason": stop, "stop_sequence": nil, "usage": usage}
	if !stream {
		writeJSON(w, msg)
		return
	}
	send := sse(w)
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	send("message_start", map[string]any{"type": "message_start", "message": start})
	if call != nil {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": name, "input": map[string]any{}}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": argsJSON(call)}})
	} else {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": Final}})
	}
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	send("message_stop", map[string]any{"type": "message_stop"})
}
