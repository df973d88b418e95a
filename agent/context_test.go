package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
)

// TestContextBudgetOverAFiftyTurnRun measures what -context-bytes promises over a long run with large outputs:
// every request as sent stays within the budget, and the prefix a request shares with the one before it (what a
// provider's prompt cache can serve) is whole except at the few turns where an elision step happens. The figures
// are logged for docs/agent.md (go test ./agent -run TestContextBudgetOverAFiftyTurnRun -v).
func TestContextBudgetOverAFiftyTurnRun(t *testing.T) {
	const budget, turns = 400_000, 50
	var mu sync.Mutex
	n := 0
	model := looptest.New(t)
	model.Respond = func(req looptest.Request) looptest.Step {
		mu.Lock()
		defer mu.Unlock()
		n++
		switch {
		case n%10 == 0: // claims to be done: the failing check's 60 KB output goes back
			return looptest.Step{Content: "I think it is done."}
		case n%3 == 0: // several large results in one turn
			return looptest.Step{Calls: []looptest.Call{command("seq 1 20000"), command("seq 20000 40000"), command("seq 1 3000")}}
		}
		return looptest.Step{Calls: []looptest.Call{command(fmt.Sprintf("seq %d 30000", n))}, Content: "Looking at the output."}
	}
	r := runAgent(t, model, "", nil, "-goal", "keep going", "-verify", "seq 1 12000; exit 1", "-max-turns", fmt.Sprint(turns),
		"-context-bytes", fmt.Sprint(budget))
	r.want(t, exitNotMet, loop.OutcomeNotMet, loop.StopMaxTurns)

	reqs := model.Requests()
	if len(reqs) != turns {
		t.Fatalf("%d requests, want %d", len(reqs), turns)
	}
	var rows []string
	steps, biggest, cached, total := 0, 0, 0, 0
	for i, req := range reqs {
		size := len(req.Raw)
		biggest = max(biggest, size)
		if size > budget {
			t.Errorf("request %d: %d bytes, over the %d budget", i+1, size, budget)
		}
		share := 0.0
		if i > 0 {
			prev := reqs[i-1].Raw
			p := commonPrefix(prev, req.Raw)
			share = float64(p) / float64(len(prev))
			cached += p
			total += size
			// Between steps the new request holds the whole of the old one but its closing fields.
			if len(prev)-p > 200 {
				steps++
			}
		}
		rows = append(rows, fmt.Sprintf("%2d %7d %6.1f%%", i+1, size, 100*share))
	}
	t.Logf("turn   bytes  prefix shared with the previous request\n%s", strings.Join(rows, "\n"))
	t.Logf("%d turns, budget %d: largest request %d bytes, %d elision steps, %.1f%% of all bytes sent were a prefix of the request before",
		turns, budget, biggest, steps, 100*float64(cached)/float64(total))
	if steps == 0 || steps > turns/5 {
		t.Errorf("%d turns lost their prefix; want a few large elision steps, not one a turn", steps)
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
