package mcpserve

import "testing"

// TestFactsFirstCompact: the long members go last in both forms; the text has a newline before each of them, the
// form for structuredContent none (a stdio message is one line); an object without long members stays as it is.
func TestFactsFirstCompact(t *testing.T) {
	obj := []byte(`{"stdout":"a\nb","exit_code":0,"stderr":"","timed_out":false,"n":[1,{"stdout":2}]}`)
	text, compact, ok := factsFirst(obj, []string{"stdout", "stderr"})
	if !ok {
		t.Fatal("not an object?")
	}
	if want := "{\"exit_code\":0,\"timed_out\":false,\"n\":[1,{\"stdout\":2}],\n\"stdout\":\"a\\nb\",\n\"stderr\":\"\"}"; string(text) != want {
		t.Errorf("text %s, want %s", text, want)
	}
	if want := `{"exit_code":0,"timed_out":false,"n":[1,{"stdout":2}],"stdout":"a\nb","stderr":""}`; string(compact) != want {
		t.Errorf("compact %s, want %s", compact, want)
	}
	if text, _, _ := factsFirst([]byte(`{"a":1}`), []string{"stdout"}); string(text) != `{"a":1}` {
		t.Errorf("no long members: %s", text)
	}
	if text, _, _ := factsFirst([]byte(`{"stdout":"x"}`), []string{"stdout"}); string(text) != "{\n\"stdout\":\"x\"}" {
		t.Errorf("only long members: %q", text)
	}
	if _, _, ok := factsFirst([]byte(`[1]`), nil); ok {
		t.Error("an array taken for an object")
	}
}
