package outputs

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Package outputs keeps full outputs: the whole of a stream that a tool result could show only the head and tail
// of, kept for the MCP session that ran the command and served to it as a resource (resource.go). It is below the
// executor's tools and processes, which write to it, and knows nothing of them.
//
// Where the bytes live: each session that has kept an output has one temporary file, removed from its folder as soon
// as it is made (only the open descriptor reaches it, and the system frees it when the descriptor closes, even if the
// server is killed). The file is cut into blocks of outputBlock bytes; an output is a list of blocks, and an evicted
// output's blocks are reused. A session's outputs together hold at most budget bytes of blocks, so its file never
// grows past the budget, and the server's memory holds only the block lists: about 8 bytes per 64 KiB kept.
// One descriptor per session, not per output: a session may keep hundreds of outputs.
//
// All sessions together hold at most total bytes (the executor's -output-total): without it, the per-session
// budget times the session cap (256 by default) would be the bound on the server's temporary folder. A session
// that needs a block while the total is full evicts its own oldest outputs, never another session's: one client
// cannot push out another's outputs, and the total frees as sessions end.
//
// Requests without a session (MCP 2026-07-28 over HTTP) keep their outputs in one more store of the same kind, the
// stateless store (Owner): an output there is named by a 130-bit handle, read by whoever holds its URI, evicted
// oldest first within a budget of half the total (every stateless client shares it: there is no client to tell
// apart), and dropped when no call has read or written it for the stateless idle timeout.

// Defaults and bounds of the per-session budget.
const (
	// DefaultBudget is how many bytes of full outputs each session keeps: the outputs of a long agent session.
	DefaultBudget = 64 << 20
	// DefaultTotal is how many bytes of full outputs all sessions together keep: eight full sessions.
	DefaultTotal = 8 * DefaultBudget
	// outputBlock is the unit the store allocates, and counts against the budget, in.
	outputBlock = 64 << 10
	// maxEvictedNotes is how many evicted outputs a session remembers, so that reading one says why it is gone.
	maxEvictedNotes = 1024
)

// Store is the store of full outputs, per MCP session. Keep starts keeping a stream; the session's outputs are
// freed when the session ends.
type Store struct {
	budget        int64 // per session; 0: keep nothing
	total         *outputTotal
	statelessIdle time.Duration // a stateless output unread and unwritten this long is dropped
	logger        *slog.Logger

	mu        sync.Mutex
	bySession map[*mcp.ServerSession]*sessionOutputs
	stateless *sessionOutputs // nil until a stateless request keeps an output
	stop      chan struct{}   // closed by Close: the stateless store's reaper ends
	closed    bool
}

// Owner is whom a kept output belongs to: an MCP session (Session; nil keeps nothing), whose outputs are its own
// and end with it, or, for requests without a session (Stateless), the one stateless store, whose outputs are
// reached by their URI alone. Which one a call gets is its caller's decision; the store only keeps them apart.
type Owner struct {
	Session   *mcp.ServerSession
	Stateless bool
	// Client names a stateless request's client when clients can be told apart (mcpserve.StatelessClient: "token
	// 2"), "" when they cannot; the stateless store shares its room between clients by it (fair.go).
	Client string
	// Clients is how many clients there are when Client names one (mcpserve.StatelessClients: the tokens).
	Clients int
}

// SessionOwner is the owner of the outputs of the session ss.
func SessionOwner(ss *mcp.ServerSession) Owner { return Owner{Session: ss} }

// StatelessOwner is the owner of the outputs of every request without a session.
var StatelessOwner = Owner{Stateless: true}

// keeps says whether an output of ow can be kept at all: a session's, or the stateless store's.
func (ow Owner) keeps() bool { return ow.Stateless || ow.Session != nil }

// New keeps up to budget bytes per session, total bytes in all (total is at least budget); a stateless output
// unused for statelessIdle (0: mcpserve's session idle timeout) is dropped.
func New(budget, total int64, statelessIdle time.Duration, logger *slog.Logger) *Store {
	logger = cmp.Or(logger, slog.New(slog.DiscardHandler))
	if statelessIdle <= 0 {
		statelessIdle = mcpserve.DefaultSessionIdleTimeout
	}
	return &Store{budget: budget, total: &outputTotal{limit: max(total, budget)}, statelessIdle: statelessIdle, logger: logger,
		bySession: map[*mcp.ServerSession]*sessionOutputs{}, stop: make(chan struct{})}
}

// statelessBudget is the stateless store's budget: half the total, and at least a session's budget.
func (o *Store) statelessBudget() int64 { return max(o.total.limit/2, o.budget) }

// outputTotal counts the blocks all sessions hold, against the executor's total.
type outputTotal struct {
	limit int64
	used  atomic.Int64
}

// reserve takes n bytes of the total, or says there is no room.
func (t *outputTotal) reserve(n int64) bool {
	for {
		used := t.used.Load()
		if used+n > t.limit {
			return false
		}
		if t.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

func (t *outputTotal) release(n int64) { t.used.Add(-n) }

// sessionOutputs is one session's outputs and the file that holds them.
type sessionOutputs struct {
	budget    int64
	total     *outputTotal
	logger    *slog.Logger
	stateless bool // the stateless store: room is made by fair.go's rule, not oldest first

	mu          sync.Mutex
	ended       bool
	file        *os.File // nil until the first block
	fileBlocks  int64    // blocks in the file
	free        []int64  // blocks of the file no output holds
	used        int64    // bytes of the blocks live outputs hold
	live        map[string]*keptOutput
	order       []*keptOutput // live outputs, oldest first
	evicted     map[string]string
	evictedKeys []string // oldest first, at most maxEvictedNotes
}

// keptOutput is one stream in a session's file.
type keptOutput struct {
	id       string // the resource's URI path, e.g. "3f9c…/stdout"
	blocks   []int64
	size     int64
	complete bool      // the stream ended
	used     time.Time // made, written or read last, for the stateless store's expiry
	client   string    // the stateless client that made it, when clients can be told apart
	clients  int       // how many clients there are then (Owner.Clients)
	read     bool      // read to its end once complete: the stateless store may make room with it (fair.go)
}

// owned is ow's outputs: a session's, made (and set to be freed when the session ends) on first use, or the
// stateless store; nil when the store keeps nothing.
func (o *Store) owned(ow Owner, create bool) *sessionOutputs {
	if o == nil || o.budget <= 0 {
		return nil
	}
	if ow.Stateless {
		return o.statelessStore(create)
	}
	return o.session(ow.Session, create)
}

// statelessStore is the stateless era's outputs, made on first use.
func (o *Store) statelessStore(create bool) *sessionOutputs {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stateless == nil && create && !o.closed {
		o.stateless = &sessionOutputs{budget: o.statelessBudget(), total: o.total, logger: o.logger, live: map[string]*keptOutput{}, evicted: map[string]string{},
			stateless: true}
		go o.reapStateless(o.stateless)
	}
	return o.stateless
}

// reapStateless drops the outputs of s no call has used for the idle timeout, until Close.
func (o *Store) reapStateless(s *sessionOutputs) {
	tick := time.NewTicker(mcpserve.ReapEvery(o.statelessIdle))
	defer tick.Stop()
	for {
		select {
		case <-o.stop:
			return
		case now := <-tick.C:
			s.expire(now, o.statelessIdle)
		}
	}
}

// expire evicts the outputs unused for idle.
func (s *sessionOutputs) expire(now time.Time, idle time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, out := range append([]*keptOutput(nil), s.order...) {
		if now.Sub(out.used) >= idle {
			s.evict(out, fmt.Sprintf("no call read it for %v (a request without a session keeps an output until it goes unread that long)", idle))
		}
	}
}

// Close frees the stateless store and stops its reaper (the sessions' outputs end with their sessions).
func (o *Store) Close() {
	if o == nil {
		return
	}
	o.mu.Lock()
	s := o.stateless
	o.stateless = nil
	if !o.closed {
		o.closed = true
		close(o.stop)
	}
	o.mu.Unlock()
	if s != nil {
		s.end()
	}
}

// session is ss's outputs, made (and set to be freed when ss ends) on first use; nil without a session or when the
// store keeps nothing.
func (o *Store) session(ss *mcp.ServerSession, create bool) *sessionOutputs {
	if o == nil || o.budget <= 0 || ss == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.bySession[ss]
	if s == nil && create {
		s = &sessionOutputs{budget: o.budget, total: o.total, logger: o.logger, live: map[string]*keptOutput{}, evicted: map[string]string{}}
		o.bySession[ss] = s
		go func() {
			// However the session ends (the client deletes it, it expires, the server stops, stdio closes), its
			// outputs go with it.
			_ = ss.Wait()
			o.end(ss)
		}()
	}
	return s
}

// end frees the outputs of ss.
func (o *Store) end(ss *mcp.ServerSession) {
	o.mu.Lock()
	s := o.bySession[ss]
	delete(o.bySession, ss)
	o.mu.Unlock()
	if s != nil {
		s.end()
	}
}

// end frees every output of s and its file.
func (s *sessionOutputs) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	s.total.release(s.used)
	if s.file != nil {
		_ = s.file.Close()
		s.file = nil
	}
	s.live, s.order, s.free, s.used, s.evicted, s.evictedKeys = nil, nil, nil, 0, nil, nil
}

// Health is the store's state for the health endpoint.
func (o *Store) Health() protocol.FullOutputsHealth {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := protocol.FullOutputsHealth{Budget: o.budget, Total: o.total.limit, Sessions: len(o.bySession)}
	for _, s := range o.bySession {
		s.mu.Lock()
		h.Bytes += s.used
		s.mu.Unlock()
	}
	if s := o.stateless; s != nil {
		s.mu.Lock()
		h.Bytes += s.used
		s.mu.Unlock()
	}
	return h
}

// add starts a new, empty output named id, of ow's client (a stateless store's; none otherwise).
func (s *sessionOutputs) add(id string, ow Owner) *keptOutput {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil
	}
	out := &keptOutput{id: id, used: time.Now(), client: ow.Client, clients: ow.Clients}
	s.live[id] = out
	s.order = append(s.order, out)
	return out
}

// write appends p to out, evicting the session's oldest outputs when the budget is reached. When out itself is
// evicted, what follows is dropped.
func (s *sessionOutputs) write(out *keptOutput, p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(p) > 0 {
		if s.ended || s.live[out.id] != out {
			return
		}
		if out.size == int64(len(out.blocks))*outputBlock { // every block full
			b, ok := s.allocate(out)
			if !ok {
				return
			}
			out.blocks = append(out.blocks, b)
		}
		within := out.size - int64(len(out.blocks)-1)*outputBlock
		n := min(int64(len(p)), outputBlock-within)
		if _, err := s.file.WriteAt(p[:n], out.blocks[len(out.blocks)-1]*outputBlock+within); err != nil {
			s.logger.Error("full output not kept", "output", out.id, "error", err)
			s.evict(out, "the server could not write it to its temporary file (its log says why)")
			return
		}
		out.size += n
		p = p[n:]
	}
	out.used = time.Now()
}

// allocate gives out a free block, evicting the session's oldest outputs while its budget, or the executor's total,
// is full; false when out itself had to go.
func (s *sessionOutputs) allocate(out *keptOutput) (int64, bool) {
	if s.stateless {
		if !s.makeRoomFairly(out) {
			return 0, false
		}
		return s.takeBlock(out)
	}
	for {
		overBudget := s.used+outputBlock > s.budget
		if !overBudget && s.total.reserve(outputBlock) {
			break
		}
		victim := s.order[0]
		switch {
		case victim == out && len(s.order) == 1 && overBudget:
			s.evict(out, fmt.Sprintf("it alone outgrew this session's budget for full outputs, %d bytes (the executor's -output-budget)", s.budget))
			return 0, false
		case victim == out && len(s.order) == 1:
			s.evict(out, fmt.Sprintf("the executor's total for full outputs, %d bytes for all sessions together (its -output-total), "+
				"was full: the other sessions' outputs hold it until they end", s.total.limit))
			return 0, false
		case overBudget:
			s.evict(victim, fmt.Sprintf("newer output needed its room: this session keeps at most %d bytes of full outputs (the executor's -output-budget), and evicts the oldest first", s.budget))
		default:
			s.evict(victim, fmt.Sprintf("newer output needed its room: all sessions together keep at most %d bytes of full outputs (the executor's -output-total), "+
				"and a session evicts its own oldest first", s.total.limit))
		}
		if victim == out {
			return 0, false
		}
	}
	return s.takeBlock(out)
}

// takeBlock gives out a block of the file, its room already reserved in the total; false when there is no file.
func (s *sessionOutputs) takeBlock(out *keptOutput) (int64, bool) {
	if s.file == nil {
		f, err := os.CreateTemp("", "goalbox-outputs-*")
		if err == nil {
			// Unlinked at once: nothing else can open it, and it is gone when the descriptor closes.
			err = os.Remove(f.Name())
			if err != nil {
				_ = f.Close()
			}
		}
		if err != nil {
			s.total.release(outputBlock) // the block reserved above, which out does not hold yet
			s.logger.Error("full output not kept: no temporary file", "output", out.id, "error", err)
			s.evict(out, "the server could not make a temporary file for it (its log says why)")
			return 0, false
		}
		s.file = f
	}
	var b int64
	if n := len(s.free); n > 0 {
		b, s.free = s.free[n-1], s.free[:n-1]
	} else {
		b = s.fileBlocks
		s.fileBlocks++
	}
	s.used += outputBlock
	return b, true
}

// evict drops out and remembers why, for a later read of it.
func (s *sessionOutputs) evict(out *keptOutput, why string) {
	if s.live[out.id] != out {
		return
	}
	delete(s.live, out.id)
	s.order = slices.DeleteFunc(s.order, func(o *keptOutput) bool { return o == out })
	s.free = append(s.free, out.blocks...)
	s.used -= int64(len(out.blocks)) * outputBlock
	s.total.release(int64(len(out.blocks)) * outputBlock)
	out.blocks = nil
	s.evicted[out.id] = fmt.Sprintf("was evicted at %s: %s", time.Now().UTC().Format(time.TimeOnly), why)
	s.evictedKeys = append(s.evictedKeys, out.id)
	if len(s.evictedKeys) > maxEvictedNotes {
		delete(s.evicted, s.evictedKeys[0])
		s.evictedKeys = s.evictedKeys[1:]
	}
}

// finish marks out complete: the stream ended.
func (s *sessionOutputs) finish(out *keptOutput) {
	s.mu.Lock()
	out.complete = true
	s.mu.Unlock()
}

// kept says whether out is still held.
func (s *sessionOutputs) kept(out *keptOutput) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.ended && s.live[out.id] == out
}

// page is what a read of an output returns.
type page struct {
	data     []byte
	size     int64 // the output's size so far
	complete bool
}

// read returns up to length bytes of the output id from offset on. A missing output's error says whether it was
// evicted (and why) or never was this session's.
func (s *sessionOutputs) read(id string, offset, length int64) (page, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.live[id]
	if s.ended || out == nil {
		if why, ok := s.evicted[id]; ok && !s.ended {
			return page{}, &outputGone{why: why}
		}
		return page{}, errNoSuchOutput
	}
	switch {
	case offset > out.size || offset == out.size && out.complete:
		return page{}, fmt.Errorf("offset %d is past the end: the output has %d bytes, so give an offset from 0 to %d", offset, out.size, out.size-1)
	case offset == out.size:
		return page{}, fmt.Errorf("no output past offset %d yet: the stream is still being written; read again later", offset)
	}
	out.used = time.Now()
	n := min(length, out.size-offset)
	if out.complete && offset+n == out.size {
		out.read = true
	}
	data := make([]byte, n)
	for done := int64(0); done < n; {
		at := offset + done
		block, within := at/outputBlock, at%outputBlock
		k := min(n-done, outputBlock-within)
		if _, err := s.file.ReadAt(data[done:done+k], out.blocks[block]*outputBlock+within); err != nil {
			s.logger.Error("full output not read", "output", id, "error", err)
			return page{}, fmt.Errorf("the server could not read the output from its temporary file (its log says why)")
		}
		done += k
	}
	return page{data: data, size: out.size, complete: out.complete}, nil
}

// outputGone is a read of an evicted output.
type outputGone struct{ why string }

func (e *outputGone) Error() string { return e.why }

// errNoSuchOutput is a session's read of an output it cannot reach: none of its own, and no stateless one by that
// exact URI.
var errNoSuchOutput = errors.New("this session has no such output: an output is readable only by the MCP session whose command made it, " +
	"until that session ends (one made by a request without a session, MCP 2026-07-28, by its exact URI)")

// errNoStatelessOutput is a stateless request's read of an output it cannot reach.
var errNoStatelessOutput = errors.New("no such output: a request without a session (MCP 2026-07-28) reads an output only by the exact URI " +
	"its result named (a session's outputs are that session's only); it may have been evicted by newer outputs, or dropped unread")
