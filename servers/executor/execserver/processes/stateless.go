package processes

// What a call's background processes and kept outputs belong to: the outputs.Owner the tools give. Over stdio (one
// client, both protocol eras) and for MCP 2025-11-25 sessions over HTTP it is the MCP session, as before: a process
// id ("p1") and an output's URI mean something only within the session that made them, and both end with it. A stateless request (MCP 2026-07-28 over
// HTTP, mcpserve.Stateless) has no session: the go-sdk serves it in a throwaway session that ends with its POST. So
// what such a call makes is reached through a handle the call returns — 130 random bits (crypto/rand) in lower-case
// base32 — and through nothing else:
//
//   - a handle is a capability: whoever holds it may use it, from either era (a session given a stateless
//     process's process_id may read and stop it); it is never derived from another handle, so a neighbour of a real
//     one, or one with a bit flipped, finds nothing;
//   - no list shows it: sandbox_list_processes in a stateless request lists nothing (every stateless client shares
//     the one bearer token, so there is no "caller" to list for), and a session's list shows its own processes only;
//   - a session's process id ("p1") is not a handle: sent statelessly it finds nothing.
//
// Bounds, since no session's end frees them: the stateless era's processes run at most Settings.StatelessMax at
// once (all stateless clients together), keep at most statelessEnded ended ones, and each is killed and forgotten
// when no call has named it for StatelessIdle (an ended one after StatelessUnused); its kept outputs share one store
// with a budget of half the executor's output total, evicted oldest first and dropped when unread for
// StatelessIdle. These mirror a session's limits: the idle and unused timeouts are mcpserve's session
// defaults, and the process buffers and full outputs of the stateless era are held within the same server-wide
// totals as every session's.

import (
	"fmt"
	"sort"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/outputs"
)

// statelessProcessPrefix starts a stateless process's process_id, so that it cannot be taken for a session's ("p1").
const statelessProcessPrefix = "proc-"

// statelessEnded is how many ended stateless processes are kept for reading, oldest forgotten first: twice a
// session's, since every stateless client shares them.
const statelessEnded = 2 * endedProcessesPerSession

// startStateless runs r as a process of the stateless era for ow's client, named by a new handle. When clients can
// be told apart (ow.Client, one per token of several), each runs at most Settings.Max at once, a session's cap, and
// at most its even share of StatelessMax (ow.Clients tokens), so that however many the others start, each client
// can always start its share; with one token they share it.
func (t *Table) startStateless(ow outputs.Owner, r backend.Request, openStdin bool) (*Process, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, fmt.Errorf("the executor is shutting down")
	}
	running, mine := 0, 0
	for _, p := range t.byHandle {
		if p.running() {
			running++
			if ow.Client != "" && p.client == ow.Client {
				mine++
			}
		}
	}
	limit, why := t.settings.Max, "the executor's -max-processes, a session's cap"
	if share := t.settings.StatelessMax / max(ow.Clients, 1); ow.Client != "" && share < limit {
		limit, why = max(share, 1), fmt.Sprintf("its share of the executor's -stateless-processes, %d shared evenly between the %d tokens of its -token",
			t.settings.StatelessMax, ow.Clients)
	}
	if ow.Client != "" && mine >= limit {
		t.mu.Unlock()
		return nil, fmt.Errorf("this client (%s of the executor's -token) already runs %d processes without a session, the most one client may "+
			"(%s); stop one with %s first", ow.Client, mine, why, protocol.ToolStopProcess)
	}
	if running >= t.settings.StatelessMax {
		t.mu.Unlock()
		return nil, fmt.Errorf("requests without a session (MCP %s) already run %d processes together, the most they may (the executor's "+
			"-stateless-processes; every such client shares this cap, unless each has a token of its own in -token); stop one with %s, or wait: "+
			"a process no call names for %v is stopped", mcpserve.StatelessVersion, running, protocol.ToolStopProcess, t.settings.StatelessIdle)
	}
	p := t.newProcess(statelessProcessPrefix+outputs.NewHandle(), r)
	p.client = ow.Client
	t.byHandle[p.id] = p
	forgotten := t.forgetEndedStatelessLocked()
	t.mu.Unlock()
	t.reaping.Do(func() { go t.reapStateless() })
	t.forget(forgotten)
	t.keepStreams(ow, p)
	t.launch(p, r, openStdin)
	return p, nil
}

// forgetEndedStatelessLocked takes out the oldest ended stateless processes past statelessEnded (t.mu held) and
// returns them, to be released.
func (t *Table) forgetEndedStatelessLocked() []*Process {
	var ended []*Process
	for _, p := range t.byHandle {
		if !p.running() {
			ended = append(ended, p)
		}
	}
	if len(ended) <= statelessEnded {
		return nil
	}
	sort.Slice(ended, func(i, j int) bool { return ended[i].ended.Before(ended[j].ended) })
	out := ended[:len(ended)-statelessEnded]
	for _, p := range out {
		delete(t.byHandle, p.id)
	}
	return out
}

// forget kills procs (those still running) and frees their buffers once they ended.
func (t *Table) forget(procs []*Process) {
	for _, p := range procs {
		p.kill()
	}
	for _, p := range procs {
		<-p.done
		p.stdout.release()
		p.stderr.release()
	}
}

// reapStateless kills and forgets the stateless processes no call has named for the idle timeout, and forgets
// ended ones unread for the unused timeout, until EndAll.
func (t *Table) reapStateless() {
	tick := time.NewTicker(mcpserve.ReapEvery(min(t.settings.StatelessIdle, t.settings.StatelessUnused)))
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick.C:
			t.expireStateless(now)
		}
	}
}

func (t *Table) expireStateless(now time.Time) {
	var gone []*Process
	t.mu.Lock()
	for id, p := range t.byHandle {
		unnamed := now.Sub(p.named)
		if unnamed >= t.settings.StatelessIdle || !p.running() && unnamed >= t.settings.StatelessUnused {
			delete(t.byHandle, id)
			gone = append(gone, p)
		}
	}
	t.mu.Unlock()
	if len(gone) > 0 {
		t.settings.Logger.Info("stateless processes forgotten: no call named them", "processes", len(gone), "idle_timeout", t.settings.StatelessIdle.String())
		t.forget(gone)
	}
}
