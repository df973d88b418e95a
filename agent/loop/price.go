package loop

import "strings"

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

// builtinPrices are OpenAI's list prices (standard tier, uncached input) for a few common models, as published in
// 2025. Prices change: -price-in/-price-out override them, and a model not listed has no cost unless given one.
var builtinPrices = map[string]Price{
	"gpt-4o":       {2.50, 10.00},
	"gpt-4o-mini":  {0.15, 0.60},
	"gpt-4.1":      {2.00, 8.00},
	"gpt-4.1-mini": {0.40, 1.60},
	"gpt-4.1-nano": {0.10, 0.40},
	"o3":           {2.00, 8.00},
	"o4-mini":      {1.10, 4.40},
	"gpt-5":        {1.25, 10.00},
	"gpt-5-mini":   {0.25, 2.00},
	"gpt-5-nano":   {0.05, 0.40},
}

// LookupPrice finds model in the built-in table. A dated snapshot name (gpt-4o-2024-08-06) takes its family's
// price; the longest matching family wins, so gpt-4o-mini-... is not priced as gpt-4o.
func LookupPrice(model string) (Price, bool) {
	model = strings.ToLower(model)
	if i := strings.LastIndexByte(model, '/'); i >= 0 { // "openai/gpt-4o" on routers
		model = model[i+1:]
	}
	best, found := "", false
	for name := range builtinPrices {
		if (model == name || strings.HasPrefix(model, name+"-")) && len(name) > len(best) {
			best, found = name, true
		}
	}
	return builtinPrices[best], found
}
