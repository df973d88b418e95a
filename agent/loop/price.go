package loop

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	InPerMillion  float64 `json:"in_per_million"`
	OutPerMillion float64 `json:"out_per_million"`
}

// Known says a price was set.
func (p Price) Known() bool { return p.InPerMillion > 0 || p.OutPerMillion > 0 }

// Cost is the dollars for u.
func (p Price) Cost(u Usage) float64 {
	return (float64(u.PromptTokens)*p.InPerMillion + float64(u.CompletionTokens)*p.OutPerMillion) / 1e6
}
