package openaichat

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	Index        int             `json:"index"`
	Message      json.RawMessage `json:"message"`
	Delta        json.RawMessage `json:"delta"`
	FinishReason string          `json:"finish_reason"`
}

type wireDelta struct {
	Content          flexText          `json:"content"`
	Refusal          string            `json:"refusal"`
	ReasoningContent string            `json:"reasoning_content"`
	Reasoning        string            `json:"reasoning"`
	ToolCalls        []json.RawMessage `json:"tool_calls"`
	extra            json.RawMessage   // the fields beside these (extra.go)
}

// wireCall is one tool call, or a piece of one in a stream.
type wireCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string   `json:"name"`
		Arguments flexArgs `json:"arguments"`
	} `json:"function"`
	extra json.RawMessage // the fields beside index, id, type and function (extra.go)
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
	extra              json.RawMessage // the message's fields beside the known ones (extra.go)
	calls              []loop.ToolCall
	callIndex          map[int]int // the stream's index → position in calls
	finish             string
	model              string
	usage              *wireUsage
	choices            bool // a choice was seen at all
	// onText, when set, hears each piece of the answer's text as it arrives (a stream), so that a person watching
	// reads the model as it writes.
	onText func(string)
}

// add takes one whole response or one chunk. An error inside it (a 200 whose body is an error, OpenRouter's
// mid-stream failure) is returned as found; a chunk that cannot be read is an error.
func (a *answer) add(r wireResponse) (errorBody, bool, error) {
	if len(r.Error) > 0 && string(r.Error) != "null" {
		e, _ := parseError([]byte(`{"error":` + string(r.Error) + `}`))
		return e, true, nil
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
		raw, whole := ch.Delta, false
		if len(raw) == 0 || string(raw) == "null" || string(raw) == "{}" {
			raw, whole = ch.Message, true
		}
		if len(raw) > 0 && string(raw) != "null" {
			d, err := readDelta(raw)
			if err != nil {
				return errorBody{}, false, err
			}
			if err := a.addDelta(d, whole); err != nil {
				return errorBody{}, false, err
			}
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
	return errorBody{}, false, nil
}

// readDelta reads a message or a delta, and keeps what it holds beside the known fields.
func readDelta(raw json.RawMessage) (wireDelta, error) {
	var d wireDelta
	if err := json.Unmarshal(raw, &d); err != nil {
		return d, err
	}
	d.extra = extraFields(raw, messageFields)
	return d, nil
}

// addDelta takes a whole message (whole) or a stream's piece of one.
func (a *answer) addDelta(d wireDelta, whole bool) error {
	a.content.WriteString(string(d.Content))
	if d.Content == "" {
		a.content.WriteString(d.Refusal)
	}
	if a.onText != nil && d.Content != "" {
		a.onText(string(d.Content))
	}
	switch {
	case d.ReasoningContent != "":
		a.reasoning.WriteString(d.ReasoningContent)
		a.reasoningField = "reasoning_content"
	case d.Reasoning != "":
		a.reasoning.WriteString(d.Reasoning)
		a.reasoningField = "reasoning"
	}
	a.extra = mergeExtra(a.extra, d.extra)
	for _, raw := range d.ToolCalls {
		var c wireCall
		if err := json.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("a tool call is not an object: %s", shortText(string(raw), 200))
		}
		c.extra = extraFields(raw, callFields)
		if whole {
			// A whole message lists each call once: never a piece of another, whatever its index or ID say.
			a.calls = append(a.calls, loop.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: string(c.Function.Arguments), Extra: loop.Extra(c.extra)})
			continue
		}
		a.addPiece(c)
	}
	return nil
}

// addPiece adds a stream's piece of a call to the call it belongs to: the one with its index; without an index,
// the one with its ID; without either, the last one. A piece that names a tool while the call it would join
// already has whole arguments starts a new call (servers that drop the index and repeat or leave out the ID), and
// a name repeated in every piece (MiniMax on NIM, Kimi on Fireworks) is not glued to itself.
func (a *answer) addPiece(c wireCall) {
	if a.callIndex == nil {
		a.callIndex = map[int]int{}
	}
	name, args := c.Function.Name, string(c.Function.Arguments)
	pos, found := -1, false
	switch {
	case c.Index != nil:
		pos, found = a.callIndex[*c.Index]
	case c.ID != "":
		for i := len(a.calls) - 1; i >= 0 && !found; i-- { // the latest: an ID may be reused
			pos, found = i, a.calls[i].ID == c.ID
		}
	case len(a.calls) > 0:
		pos, found = len(a.calls)-1, true
	}
	if found && c.Index == nil && name != "" && json.Valid([]byte(a.calls[pos].Arguments)) {
		found = false // a new call that reuses an ID, or none
	}
	if !found {
		a.calls = append(a.calls, loop.ToolCall{})
		pos = len(a.calls) - 1
		if c.Index != nil {
			a.callIndex[*c.Index] = pos
		}
	}
	tc := &a.calls[pos]
	if c.ID != "" {
		tc.ID = c.ID
	}
	if name != tc.Name {
		tc.Name += name
	}
	tc.Arguments += args
	tc.Extra = loop.Extra(mergeExtra(json.RawMessage(tc.Extra), c.extra))
}

func (a *answer) reply() loop.Reply {
	msg := loop.Message{Role: loop.RoleAssistant, Content: a.content.String(), ToolCalls: a.calls,
		Reasoning: a.reasoning.String(), ReasoningField: a.reasoningField, Extra: loop.Extra(a.extra)}
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
// alive is told of each data event.
func readStream(body io.Reader, a *answer, alive func()) (apiErr *errorBody, err error) {
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
		e, isErr, err := a.add(r)
		switch {
		case err != nil:
			return false, nil, errors.New("a stream chunk cannot be read: " + err.Error())
		case isErr:
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
			alive()
			data.Write(bytes.TrimPrefix(line[5:], []byte(" ")))
			data.WriteByte('\n')
		}
		// Comments (": keep-alive", ": OPENROUTER PROCESSING") and other fields are skipped: they do not reset the
		// watchdog, so a server that queues the request behind comments alone is caught in -model-timeout.
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
