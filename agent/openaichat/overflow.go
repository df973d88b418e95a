package openaichat

import "strings"

// How each provider says that a request is over the model's context, as it says it: the status alone does not
// tell (llama.cpp answered 500 before it answered 400; OpenAI, vLLM and Mistral 400; TGI 422), and most servers
// send no code. An overflow is never retried as it is: the loop elides old output and asks once more
// (loop/turn.go). docs/agent.md's overflow table lists these rows; TestOverflowWordings reads each one.
var contextOverflow = []struct {
	provider, status, words string
}{
	{"OpenAI, Groq", "400", "context_length_exceeded"},
	{"OpenAI, vLLM, DeepSeek, OpenRouter", "400", "maximum context length"},
	{"Anthropic (OpenAI-compatible)", "400", "prompt is too long"},
	{"Gemini", "400", "exceeds the maximum number of tokens allowed"},
	{"llama.cpp", "400", "exceed_context_size_error"},
	{"llama.cpp (older builds)", "500", "exceeds the available context size"},
	{"xAI", "400", "maximum prompt length"},
	{"TGI", "422", "must be <= "},
	{"Mistral", "400", "too large for model with"},
	{"LM Studio", "400", "greater than the context length"},
	{"Cohere, others", "400", "too many tokens"},
	{"any", "413", ""},
}

// isOverflow says whether a failure is a context overflow: one of the wordings (in the message or the code,
// lower case), or a 413.
func isOverflow(status int, codes, msg string) bool {
	for _, o := range contextOverflow {
		switch {
		case o.words == "":
			if status == 413 {
				return true
			}
		case o.words == "must be <= ":
			// TGI: "`inputs` tokens + `max_new_tokens` must be <= 4096"
			if strings.Contains(msg, o.words) && strings.Contains(msg, "tokens") {
				return true
			}
		case strings.Contains(msg, o.words) || strings.Contains(codes, o.words):
			return true
		}
	}
	return strings.Contains(msg, "context window") || strings.Contains(msg, "context length")
}
