package agents

import (
	"encoding/json"
	"net/http"
	"strings"
)

// OpenAI Responses (Codex): input items; a tool result is a function_call_output whose output is a string or a list
// of input_text and input_image items. Codex streams.

func readResponses(req map[string]any) Request {
	rec := Request{API: "responses", System: str(req["instructions"])}
	for _, t := range list(req["tools"]) {
		if n := str(obj(t)["name"]); n != "" {
			rec.Tools = append(rec.Tools, n)
		}
		// Codex may group MCP tools in a namespace: {"type":"namespace","name":..,"tools":[...]}.
		for _, sub := range list(obj(t)["tools"]) {
			rec.Tools = append(rec.Tools, str(obj(t)["name"])+"/"+str(obj(sub)["name"]))
		}
	}
	for _, it := range list(req["input"]) {
		item := obj(it)
		if str(item["type"]) != "function_call_output" {
			continue
		}
		rec.Results = append(rec.Results, responsesOutput(item["output"]))
	}
	return rec
}

func responsesOutput(out any) Seen {
	var seen Seen
	switch o := out.(type) {
	case string:
		seen.Text = o
	case []any:
		for _, p := range o {
			part := obj(p)
			switch str(part["type"]) {
			case "input_text", "output_text":
				seen.Text += str(part["text"])
			case "input_image":
				if img, ok := dataURL(str(part["image_url"])); ok {
					seen.Images = append(seen.Images, img)
				}
			}
		}
	case map[string]any: // an object with content (older shapes)
		b, _ := json.Marshal(o)
		seen.Text = string(b)
	}
	return seen
}

func answerResponses(w http.ResponseWriter, call *Call, name, id string) {
	send := sse(w)
	send("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_" + id}})
	var item map[string]any
	if call != nil {
		item = map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id, "name": name, "arguments": argsJSON(call), "status": "completed"}
		if ns, tool, ok := strings.Cut(name, "/"); ok { // a tool of a namespace (Codex: mcp__exec)
			item["namespace"], item["name"] = ns, tool
		}
	} else {
		item = map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": Final, "annotations": []any{}}}}
	}
	send("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	send("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	send("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": "resp_" + id, "status": "completed", "output": []any{item},
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 10, "total_tokens": 20,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}})
}
