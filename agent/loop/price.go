package loop

import "cmp"

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	InPerMillion  float64 `json:"in_per_million"`
	OutPerMillion float64 `json:"out_per_million"`
	// CachedInPerMillion is the price of input tokens the server read from its prompt cache (Usage.CachedTokens),
	// where it reports them; 0 prices them as other input.
	CachedInPerMillion float64 `json:"cached_in_per_million,omitempty"`
}

// Known says a price was set.
func (p Price) Known() bool { return p.InPerMillion > 0 || p.OutPerMillion > 0 }

// Cost is the dollars for u.
func (p Price) Cost(u Usage) float64 {
	cached := min(u.CachedTokens, u.PromptTokens)
	cachedPrice := p.CachedInPerMillion
	cachedPrice = cmp.Or(cachedPrice, p.InPerMillion)
	return (float64(u.PromptTokens-cached)*p.InPerMillion + float64(cached)*cachedPrice + float64(u.CompletionTokens)*p.OutPerMillion) / 1e6
}
