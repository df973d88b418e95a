package openaichat

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/goalbox/goalbox/agent/loop"
)

// The answer, whole (a JSON completion) or in chunks (a stream): the same fields, in "message" or "delta".
type wireResponse struct {
	Model   string          `json:"model"`
	Choices []wireChoice    `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type wireChoice struct {
	Index        int       `json:"index"`
	Message      wireDelta `json:"message"`
	Delta        wireDelta `json:"delta"`
	FinishReason string    `json:"finish_reason"`
}

type wireDelta struct {
	Content          flexText `json:"content"`
	Refusal          string   `json:"refusal"`
	ReasoningContent string   `json:"reasoning_content"`
	Reasoning        string   `json:"reasoning"`
	ToolCalls        []struct {
		Index    *int   `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string   `json:"name"`
			Arguments flexArgs `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type wireUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	PromptCacheHitTokens int64 `json:"prompt_cache_hit_tokens"` // DeepSeek's name for it
}

// flexText is content sent as a string or as a list of text parts.
type flexText string

func (t *flexText) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*t = flexText(s)
		return nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil && string(b) != "null" {
		return err
	}
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	*t = flexText(sb.String())
	return nil
}

// flexArgs is a call's arguments sent as a JSON string (the API) or as the object itself (some servers).
type flexArgs string

func (a *flexArgs) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*a = flexArgs(s)
		return nil
	}
	if string(b) != "null" {
		*a = flexArgs(b)
	}
	return nil
}

// answer gathers a reply from a whole completion or from its chunks.
type answer struct {
	content, reasoning strings.Builder
	reasoningField     string
	calls              []loop.ToolCall
	callIndex          map[int]int // the stream's index → position in calls
	finish             string
	model              string
	usage              *wireUsage
	choices            bool // a choice was seen at all
}

// add takes one whole response or one chunk. An error inside it (a 200 whose body is an error, OpenRouter's
// mid-stream failure) is returned as found.
func (a *answer) add(r wireResponse) (errorBody, bool) {
	if len(r.Error) > 0 && string(r.Error) != "null" {
		e, _ := parseError([]byte(`{"error":` + string(r.Error) + `}`))
		return e, true
	}
	if r.Model != "" {
		a.model = r.Model
	}
	if r.Usage != nil {
		a.usage = r.Usage
	}
	for _, ch := range r.Choices {
		if ch.Index != 0 {
			continue // one choice is asked for; a server sending more has the first one taken
		}
		a.choices = true
		d := ch.Delta
		if d.Content == "" && d.ReasoningContent == "" && d.Reasoning == "" && d.ToolCalls == nil && d.Refusal == "" {
			d = ch.Message
		}
		a.content.WriteString(string(d.Content))
		if d.Content == "" {
			a.content.WriteString(d.Refusal)
		}
		switch {
		case d.ReasoningContent != "":
			a.reasoning.WriteString(d.ReasoningContent)
			a.reasoningField = "reasoning_content"
		case d.Reasoning != "":
			a.reasoning.WriteString(d.Reasoning)
			a.reasoningField = "reasoning"
		}
		for _, tc := range d.ToolCalls {
			a.addCall(tc.Index, tc.ID, tc.Function.Name, string(tc.Function.Arguments))
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
	return errorBody{}, false
}

// addCall adds a call or a piece of one. Streams number calls by index; a server that leaves the index out sends
// each call whole, or its pieces without a new ID.
func (a *answer) addCall(index *int, id, name, args string) {
	if a.callIndex == nil {
		a.callIndex = map[int]int{}
	}
	pos := -1
	switch {
	case index != nil:
		if p, ok := a.callIndex[*index]; ok {
			pos = p
		}
	case len(a.calls) > 0 && (id == "" || id == a.calls[len(a.calls)-1].ID):
		pos = len(a.calls) - 1
	}
	if pos < 0 {
		a.calls = append(a.calls, loop.ToolCall{})
		pos = len(a.calls) - 1
		if index != nil {
			a.callIndex[*index] = pos
		}
	}
	c := &a.calls[pos]
	if id != "" {
		c.ID = id
	}
	c.Name += name
	c.Arguments += args
}

func (a *answer) reply() loop.Reply {
	msg := loop.Message{Role: loop.RoleAssistant, Content: a.content.String(), ToolCalls: a.calls,
		Reasoning: a.reasoning.String(), ReasoningField: a.reasoningField}
	r := loop.Reply{Message: msg, Model: a.model, FinishReason: a.finish}
	if u := a.usage; u != nil {
		r.Usage = loop.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.PromptCacheHitTokens}
		if u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens > 0 {
			r.Usage.CachedTokens = u.PromptTokensDetails.CachedTokens
		}
	}
	return r
}

// errIncomplete is a body that ended before the answer did: retried like a dropped connection.
var errIncomplete = errors.New("the answer ended before it was complete")

// readStream reads server-sent events into a. It returns when the stream says [DONE], or at its end; a stream
// that ends without [DONE] but after a finish reason is complete (some servers never send [DONE]). An error event
// (OpenRouter's upstream failing mid-answer) is returned as apiErr.
func readStream(body io.Reader, a *answer) (apiErr *errorBody, err error) {
	br := bufio.NewReaderSize(body, 64<<10)
	var data bytes.Buffer
	dispatch := func() (bool, *errorBody, error) {
		defer data.Reset()
		payload := bytes.TrimSpace(data.Bytes())
		if len(payload) == 0 {
			return false, nil, nil
		}
		if string(payload) == "[DONE]" {
			return true, nil, nil
		}
		var r wireResponse
		if err := json.Unmarshal(payload, &r); err != nil {
			return false, nil, errors.New("a stream chunk is not JSON: " + shortText(string(payload), 200))
		}
		if e, isErr := a.add(r); isErr {
			return true, &e, nil
		}
		return false, nil, nil
	}
	for {
		line, rerr := br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0 && rerr == nil: // the end of an event
			if done, e, err := dispatch(); done || err != nil {
				return e, err
			}
		case bytes.HasPrefix(line, []byte("data:")):
			data.Write(bytes.TrimPrefix(line[5:], []byte(" ")))
			data.WriteByte('\n')
		}
		// Comments (": keep-alive", ": OPENROUTER PROCESSING") and other fields are signs of life only.
		if rerr != nil {
			if done, e, err := dispatch(); done || err != nil {
				return e, err
			}
			if errors.Is(rerr, io.EOF) && a.finish != "" {
				return nil, nil
			}
			if errors.Is(rerr, io.EOF) {
				return nil, errIncomplete
			}
			return nil, rerr
		}
	}
}
