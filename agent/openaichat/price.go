package openaichat

import (
	"strings"

	"github.com/goalbox/goalbox/agent/loop"
)

// builtinPrices are OpenAI's list prices (standard tier; input, cached input, output) for a few common models, as
// published in 2025. Prices change: -price-in/-price-out override them, and a model not listed has no cost unless
// given one.
var builtinPrices = map[string]loop.Price{
	"gpt-4o":       {InPerMillion: 2.50, CachedInPerMillion: 1.25, OutPerMillion: 10.00},
	"gpt-4o-mini":  {InPerMillion: 0.15, CachedInPerMillion: 0.075, OutPerMillion: 0.60},
	"gpt-4.1":      {InPerMillion: 2.00, CachedInPerMillion: 0.50, OutPerMillion: 8.00},
	"gpt-4.1-mini": {InPerMillion: 0.40, CachedInPerMillion: 0.10, OutPerMillion: 1.60},
	"gpt-4.1-nano": {InPerMillion: 0.10, CachedInPerMillion: 0.025, OutPerMillion: 0.40},
	"o3":           {InPerMillion: 2.00, CachedInPerMillion: 0.50, OutPerMillion: 8.00},
	"o4-mini":      {InPerMillion: 1.10, CachedInPerMillion: 0.275, OutPerMillion: 4.40},
	"gpt-5":        {InPerMillion: 1.25, CachedInPerMillion: 0.125, OutPerMillion: 10.00},
	"gpt-5-mini":   {InPerMillion: 0.25, CachedInPerMillion: 0.025, OutPerMillion: 2.00},
	"gpt-5-nano":   {InPerMillion: 0.05, CachedInPerMillion: 0.005, OutPerMillion: 0.40},
}

// LookupPrice finds model in the built-in table. A dated snapshot name (gpt-4o-2024-08-06) takes its family's
// price; the longest matching family wins, so gpt-4o-mini-... is not priced as gpt-4o.
func LookupPrice(model string) (loop.Price, bool) {
	model = bareName(model) // "openai/gpt-4o" on routers
	best, found := "", false
	for name := range builtinPrices {
		if (model == name || strings.HasPrefix(model, name+"-")) && len(name) > len(best) {
			best, found = name, true
		}
	}
	return builtinPrices[best], found
}
