package outputs

// Fairness in the stateless store. Every client of the stateless era (MCP 2026-07-28) keeps its outputs in one
// store, so "oldest first", a session's rule, would let one client's new outputs erase another's before it read
// them (a flood of 256 MiB does it in under a second). So the stateless store makes room by these rules instead:
//
//   - an output is evicted to make room only if it was read to its end (its client has what it needed) or it is
//     the writing client's own; an unread output of another client is never evicted — it goes when read and then
//     pushed out, or when no call has used it for the stateless idle timeout;
//   - when clients can be told apart (several -token, mcpserve.StatelessClient), one client keeps at most its even
//     share of the store (half with two tokens, a third with three), so every other always has room; past its share
//     it evicts its own oldest outputs, read or not;
//   - when nothing may be evicted, the new output is not kept (its result had its head and tail; reading its URI
//     says why), rather than someone else's.
//
// With one token every client is the same unnamed client, and its outputs protect each other: a client that reads
// nothing fills the store, and then no new stateless output is kept until some are read or expire. That is the
// price of not erasing what another client has not read, and why several tokens are the way to share one executor.

import "fmt"

// clientBytes is what the outputs of client hold (s.mu held).
func (s *sessionOutputs) clientBytes(client string) int64 {
	var n int64
	for _, o := range s.order {
		if o.client == client {
			n += int64(len(o.blocks)) * outputBlock
		}
	}
	return n
}

// makeRoomFairly reserves a block of the total for out, evicting what the rules above allow, oldest first; false
// when out itself was not kept (s.mu held).
func (s *sessionOutputs) makeRoomFairly(out *keptOutput) bool {
	for {
		share := s.budget / int64(max(out.clients, 2))
		overShare := out.client != "" && s.clientBytes(out.client)+outputBlock > share
		overBudget := s.used+outputBlock > s.budget
		if !overShare && !overBudget && s.total.reserve(outputBlock) {
			return true
		}
		var victim *keptOutput
		for _, o := range s.order {
			own := out.client != "" && o.client == out.client
			if o != out && (own || !overShare && o.read) {
				victim = o
				break
			}
		}
		switch {
		case victim != nil && victim.client == out.client && out.client != "" && !victim.read:
			s.evict(victim, fmt.Sprintf("a newer output of the same client (%s of -token) needed its room: one client keeps at most its share, %d bytes, of the %d "+
				"bytes of full outputs that requests without a session share (half the executor's -output-total), and evicts its own oldest first", out.client, share, s.budget))
		case victim != nil:
			s.evict(victim, fmt.Sprintf("it had been read to its end, and a newer output needed its room: requests without a session share %d bytes of full "+
				"outputs (half the executor's -output-total), and only outputs read to their end, or the writing client's own, are evicted to make room", s.budget))
		case overShare:
			s.evict(out, fmt.Sprintf("it alone outgrew the share of one client (%s of -token): %d bytes of the %d bytes of full outputs that requests without a "+
				"session share", out.client, share, s.budget))
			return false
		case overBudget:
			s.evict(out, fmt.Sprintf("the %d bytes of full outputs that requests without a session share (half the executor's -output-total) were full of "+
				"outputs not yet read to their end, which are never evicted for another's; they go when read, or when unused for the stateless idle timeout", s.budget))
			return false
		default:
			s.evict(out, fmt.Sprintf("the executor's total for full outputs, %d bytes (its -output-total), was full, and the outputs of requests without a "+
				"session held none that could give way (only outputs read to their end, or the writing client's own)", s.total.limit))
			return false
		}
	}
}
