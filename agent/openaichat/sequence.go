package openaichat

import (
	"slices"

	"github.com/goalbox/goalbox/agent/loop"
)

// sequence makes the messages a request sends a conversation every provider accepts, whatever was cut (a reply
// elided or left out), resumed (-continue), retried or empty. It is the one place that knows the rules the
// strictest chat templates check (Mistral's, Gemma's, a llama.cpp or vLLM template that wants alternating turns):
//
//   - every assistant message with tool calls is followed by one tool message per call, in the calls' order: a
//     result that is missing (a run killed mid-turn) is answered as not run, one whose call is gone is left out;
//   - no two user messages in a row (an empty or cut first reply is not replayed, so its note would follow the
//     goal): they are joined;
//   - no user message right after a tool message (Mistral: "Unexpected role 'user' after role 'tool'"): its text
//     joins the last result. Images stay a user message of their own, since OpenAI takes them nowhere else.
//
// In the text tool mode results are already user messages, and the same joining keeps turns alternating.
func sequence(msgs []wireMessage) []wireMessage {
	out := make([]wireMessage, 0, len(msgs))
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch {
		case m.Role == loop.RoleTool:
			continue // placed after its call below, or left out with no call to answer
		case m.Role == loop.RoleAssistant && len(m.ToolCalls) > 0:
			out = append(out, m)
			// The results of these calls are the tool messages up to the next assistant message.
			end := i + 1
			for end < len(msgs) && msgs[end].Role != loop.RoleAssistant {
				end++
			}
			for _, tc := range m.ToolCalls {
				j := slices.IndexFunc(msgs[i+1:end], func(r wireMessage) bool { return r.Role == loop.RoleTool && r.ToolCallID == tc.ID })
				if j < 0 {
					out = append(out, wireMessage{Role: loop.RoleTool, ToolCallID: tc.ID, Content: `{"error":"this call did not run"}`})
					continue
				}
				out = append(out, msgs[i+1+j])
			}
			continue
		}
		last := len(out) - 1
		switch {
		case m.Role == loop.RoleUser && last >= 0 && out[last].Role == loop.RoleUser:
			out[last].Content = joinText(out[last].Content, m.Content)
			out[last].Images = append(out[last].Images, m.Images...)
			continue
		case m.Role == loop.RoleUser && len(m.Images) == 0 && last >= 0 && out[last].Role == loop.RoleTool:
			out[last].Content = joinText(out[last].Content, m.Content)
			continue
		}
		out = append(out, m)
	}
	return out
}

func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}
