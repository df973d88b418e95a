package openaichat

import "testing"

func TestLookupPrice(t *testing.T) {
	for model, want := range map[string]float64{"gpt-4o": 2.5, "gpt-4o-mini-2024-07-18": 0.15, "openai/gpt-4.1-mini": 0.4, "gpt-4.1-2025-04-14": 2} {
		if p, ok := LookupPrice(model); !ok || p.InPerMillion != want {
			t.Errorf("%s: %+v %v, want in %v", model, p, ok, want)
		}
	}
	if _, ok := LookupPrice("qwen2.5-coder:7b"); ok {
		t.Error("unknown model priced")
	}
}
