package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Why a tool call's context, or a session's, ended. A handler sees them with context.Cause.
var (
	// ErrClientGone: the HTTP connection that carried the call closed before the call ended.
	ErrClientGone = errors.New("the client's connection closed before the call ended")
	// ErrSessionDeleted: the client ended its session (HTTP DELETE).
	ErrSessionDeleted = errors.New("the client deleted its session")
	// ErrSessionExpired: the session had no request open for the idle timeout.
	ErrSessionExpired = errors.New("the session expired: no request for the session idle timeout")
	// ErrSessionEvicted: the session was idle and the least recently used when a new one needed its place.
	ErrSessionEvicted = errors.New("the session was closed to make room for a new one (max sessions)")
	// ErrSessionClosed: the session ended some other way (failed initialization, transport closed).
	ErrSessionClosed = errors.New("the session is closed")
	// ErrShutdown: the server is shutting down.
	ErrShutdown = errors.New("the server is shutting down")
)

// Defaults for the session limits.
const (
	// DefaultSessionIdleTimeout is long enough for a person to step away from an agent for a coffee.
	DefaultSessionIdleTimeout = 30 * time.Minute
	// DefaultSessionUnusedTimeout closes a session that runs nothing after five minutes without a request: a
	// client that went away without a DELETE frees its session's memory then, not half an hour later.
	DefaultSessionUnusedTimeout = 5 * time.Minute
	// DefaultMaxSessions: an agent holds one session per server, the load test 64; a session costs about 23 KiB
	// of server memory plus what its tools keep, so 256 bound the sessions to a few MiB.
	DefaultMaxSessions = 256
	// DefaultSessionKeepActive: an agent between two calls waits for its model, which takes seconds, rarely
	// minutes; five minutes keep every working agent's session safe from a flood of new ones.
	DefaultSessionKeepActive = 5 * time.Minute
)

// sessionKey is the context key under which a call's context carries its session's context.
type sessionKey struct{}

// SessionContext is the context of the MCP session a tool call belongs to: it ends when the session does (deleted
// by the client, expired, closed to make room, or at server shutdown), with one of the Err values above as its
// cause. Work that outlives the call but belongs to its session (a background process) should run under it. For
// a context not made by this package's middleware, and for a stateless request (Stateless: MCP 2026-07-28, no
// session), it returns ctx itself: work of a stateless call that must outlive it needs a scope of the tool's own.
func SessionContext(ctx context.Context) context.Context {
	if s, ok := ctx.Value(sessionKey{}).(context.Context); ok {
		return s
	}
	return ctx
}

// session is one live HTTP session as the table sees it.
type session struct {
	ss     *mcp.ServerSession
	ctx    context.Context
	cancel context.CancelCauseFunc
	client string    // the client's address, for the per-client cap
	open   int       // HTTP requests of this session in flight (POSTs, GET streams); guarded by sessions.mu
	holds  int       // work of the session running outside a request (HoldSession); guarded by sessions.mu
	last   time.Time // when the last request began or ended, or a hold ended; guarded by sessions.mu
}

// holdKey is the context key of a call's session in its table, for HoldSession.
type holdKey struct{}

type sessionRef struct {
	t *sessions
	s *session
}

// HoldSession marks the MCP session of the tool call ctx belongs to as running something beyond the call (a
// background process) until release is called: such a session is never closed to make room for a new one
// (Config.MaxSessions). The server's idle expiry still applies. Outside an HTTP session (stdio, stateless
// requests) it does nothing. release may be called more than once.
func HoldSession(ctx context.Context) (release func()) {
	ref, ok := ctx.Value(holdKey{}).(sessionRef)
	if !ok {
		return func() {}
	}
	ref.t.mu.Lock()
	ref.s.holds++
	ref.t.mu.Unlock()
	return sync.OnceFunc(func() {
		ref.t.mu.Lock()
		ref.s.holds--
		ref.s.last = time.Now()
		ref.t.mu.Unlock()
	})
}

// sessions is the table of live HTTP sessions: it expires idle ones, caps their number, and ends each one's context
// before closing it, so that the session's calls are cancelled instead of awaited (the go-sdk's Close waits for
// in-flight calls to return).
type sessions struct {
	base       context.Context
	idle       time.Duration
	unused     time.Duration // the idle timeout of a session that holds nothing
	keepActive time.Duration
	max        int
	perClient  int
	logger     *slog.Logger

	mu       sync.Mutex
	byID     map[string]*session
	byClient map[string]int // live and pending sessions of each client address
	pending  int            // new sessions being created (initialize requests in flight)
	closing  bool           // shutting down: no new sessions
}

func newSessions(base context.Context, cfg Config, logger *slog.Logger) *sessions {
	return &sessions{base: base, idle: cfg.SessionIdleTimeout, unused: cfg.SessionUnusedTimeout, keepActive: cfg.SessionKeepActive, max: cfg.MaxSessions,
		perClient: min(cfg.MaxSessionsPerClient, cfg.MaxSessions), logger: logger, byID: map[string]*session{}, byClient: map[string]int{}}
}

// reserve makes room for a new session of client, closing at the cap the least recently used session that is idle:
// no request open, nothing held (HoldSession), no request for keepActive. A session in use is never closed to make
// room, or opening sessions quickly would close another client's session and kill what it runs. When there is no
// room, it returns the HTTP status and a message for the client: 429 past the client's own cap, 503 when every
// session is in use.
func (t *sessions) reserve(client string) (status int, refusal string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return http.StatusServiceUnavailable, "the server is shutting down"
	}
	now := time.Now()
	if t.byClient[client] >= t.perClient && t.perClient < t.max {
		// A client past its own cap makes room among its own idle sessions (one that leaks sessions recycles them),
		// never among another's.
		victim, oldest := t.victimLocked(now, client)
		if victim == "" {
			return http.StatusTooManyRequests, fmt.Sprintf("too many sessions from this client address (%s): it has %d, the most one "+
				"address may (-max-sessions-per-client), and none is idle; end one with DELETE, or retry later", client, t.byClient[client])
		}
		t.logger.Info("session closed to make room for a new one of the same client", "session", victim, "client", client,
			"idle", now.Sub(oldest).Round(time.Second).String(), "max_sessions_per_client", t.perClient)
		t.closeLocked(victim, ErrSessionEvicted)
	}
	if len(t.byID)+t.pending >= t.max {
		victim, oldest := t.victimLocked(now, "")
		if victim == "" {
			return http.StatusServiceUnavailable, fmt.Sprintf("too many sessions: all %d are in use (-max-sessions) — each has a request "+
				"open, a command or process running, or a request in the last %v (-session-keep-active), and such a session is never "+
				"closed to make room; end one with DELETE or retry later", t.max, t.keepActive)
		}
		t.logger.Info("session closed to make room for a new one", "session", victim, "idle", now.Sub(oldest).Round(time.Second).String(), "max_sessions", t.max)
		t.closeLocked(victim, ErrSessionEvicted)
	}
	t.pending++
	t.byClient[client]++
	return 0, ""
}

// victimLocked is the least recently used idle session (of client, unless ""), or "": one with no request open,
// nothing held and no request for keepActive.
func (t *sessions) victimLocked(now time.Time, client string) (victim string, oldest time.Time) {
	for id, s := range t.byID {
		if (client == "" || s.client == client) && s.open == 0 && s.holds == 0 && now.Sub(s.last) >= t.keepActive &&
			(victim == "" || s.last.Before(oldest)) {
			victim, oldest = id, s.last
		}
	}
	return victim, oldest
}

// release ends a reservation: the session was made (add counted it) or was not.
func (t *sessions) release(client string) {
	t.mu.Lock()
	t.pending--
	t.dropClientLocked(client)
	t.mu.Unlock()
}

func (t *sessions) dropClientLocked(client string) {
	if t.byClient[client]--; t.byClient[client] <= 0 {
		delete(t.byClient, client)
	}
}

// reservation is a place reserve made for a new session: it becomes the session's (add) or is given back
// (release), once.
type reservation struct{ taken atomic.Bool }

// take reports whether the place is still to be taken, and takes it.
func (r *reservation) take() bool { return r != nil && r.taken.CompareAndSwap(false, true) }

// add registers a session of client that has just initialized. fromReservation says it takes the place its
// initialize reserved (else it is counted anew): counting both until the initialize's POST ended made a burst of
// sessions meet the cap early.
func (t *sessions) add(ss *mcp.ServerSession, client string, fromReservation bool) *session {
	ctx, cancel := context.WithCancelCause(t.base)
	s := &session{ss: ss, ctx: ctx, cancel: cancel, client: client, last: time.Now()}
	t.mu.Lock()
	if fromReservation {
		t.pending--
		t.dropClientLocked(client)
	}
	if t.closing {
		t.mu.Unlock()
		cancel(ErrShutdown)
		go ss.Close()
		return nil
	}
	if old := t.byID[ss.ID()]; old != nil {
		t.mu.Unlock()
		cancel(nil)
		return old
	}
	t.byID[ss.ID()] = s
	t.byClient[client]++
	t.mu.Unlock()
	go func() {
		// However the session ends, its context ends with it and it leaves the table.
		_ = ss.Wait()
		t.mu.Lock()
		if t.byID[ss.ID()] == s {
			delete(t.byID, ss.ID())
			t.dropClientLocked(client)
		}
		t.mu.Unlock()
		cancel(ErrSessionClosed)
	}()
	return s
}

// lookup returns the live session with this ID, or nil.
func (t *sessions) lookup(id string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// enter records a request of the session id starting; nil when no such session is live.
func (t *sessions) enter(id string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[id]
	if s != nil {
		s.open++
		s.last = time.Now()
	}
	return s
}

// leave records the end of a request that enter counted.
func (t *sessions) leave(s *session) {
	t.mu.Lock()
	s.open--
	s.last = time.Now()
	t.mu.Unlock()
}

// touch marks s as just used.
func (t *sessions) touch(s *session) {
	t.mu.Lock()
	s.last = time.Now()
	t.mu.Unlock()
}

// close ends the session id: its context (and so its calls) at once, the go-sdk session in the background. It
// reports whether the session was live.
func (t *sessions) close(id string, cause error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closeLocked(id, cause)
}

func (t *sessions) closeLocked(id string, cause error) bool {
	s := t.byID[id]
	if s == nil {
		return false
	}
	delete(t.byID, id)
	t.dropClientLocked(s.client)
	s.cancel(cause)
	go s.ss.Close()
	return true
}

// expire closes the sessions that have had no request open for the idle timeout, and those that hold nothing
// running for the shorter unused timeout.
func (t *sessions) expire(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, s := range t.byID {
		switch idle := now.Sub(s.last); {
		case s.open > 0:
		case idle >= t.idle:
			t.logger.Info("session expired", "session", id, "idle_timeout", t.idle.String())
			t.closeLocked(id, ErrSessionExpired)
		case s.holds == 0 && t.unused > 0 && idle >= t.unused:
			t.logger.Info("session expired: nothing running", "session", id, "unused_timeout", t.unused.String())
			t.closeLocked(id, ErrSessionExpired)
		}
	}
}

// ReapEvery is how often something that expires after idle is looked for: a quarter of the timeout, within 25 ms
// and 30 s. The session table reaps by it, and the executor its stateless outputs and processes.
func ReapEvery(idle time.Duration) time.Duration {
	return min(max(idle/4, 25*time.Millisecond), 30*time.Second)
}

// reap expires idle sessions until ctx ends.
func (t *sessions) reap(ctx context.Context) {
	shortest := t.idle
	if t.unused > 0 {
		shortest = min(shortest, t.unused)
	}
	tick := time.NewTicker(ReapEvery(shortest))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			t.expire(now)
		}
	}
}

// shutdown closes every session and refuses new ones; it waits for the closes until ctx ends.
func (t *sessions) shutdown(ctx context.Context) {
	t.mu.Lock()
	t.closing = true
	var wg sync.WaitGroup
	for id, s := range t.byID {
		delete(t.byID, id)
		t.dropClientLocked(s.client)
		s.cancel(ErrShutdown)
		wg.Go(func() { s.ss.Close() })
	}
	t.mu.Unlock()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// count is the number of live sessions.
func (t *sessions) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}
