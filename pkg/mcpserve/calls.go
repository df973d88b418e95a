package mcpserve

import (
	"context"
	"crypto/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// sessionHeader is the streamable HTTP transport's session header.
	sessionHeader = "Mcp-Session-Id"
	// callHeader carries, from serveMCP to the middleware, the token of the HTTP request a JSON-RPC message came
	// in. The go-sdk runs a call under a context detached from its HTTP request (for protocol versions before
	// 2026-07-28) but hands the handler the request's headers; the token finds the request's context again. A
	// client's own value is removed first.
	callHeader = "Goalbox-Call"
)

// httpCall is a POST in flight, as the middleware sees it.
type httpCall struct {
	ctx     context.Context         // the HTTP request's: done when the client's connection closes
	client  string                  // the client's address
	token   string                  // which of several tokens the POST sent ("token 2"), "" for one (clients.go)
	clients int                     // how many tokens there are, when several
	res     *reservation            // the session place reserved for this POST's initialize, if any
	created atomic.Pointer[session] // the session this POST's initialize created, if any
	// stateless: the POST speaks 2026-07-28 or later (stateless.go): it has no session, and its calls are tied to
	// the POST and to shutdown only.
	stateless bool
}

// callTable maps the tokens of POSTs in flight to their requests.
type callTable struct {
	prefix string // tells this table's tokens from another's (a server served twice)
	seq    atomic.Uint64
	mu     sync.Mutex
	m      map[string]*httpCall
}

func newCallTable() *callTable {
	return &callTable{prefix: rand.Text()[:8] + ".", m: map[string]*httpCall{}}
}

func (t *callTable) add(ctx context.Context, client string) (string, *httpCall) {
	tok := t.prefix + strconv.FormatUint(t.seq.Add(1), 36)
	c := &httpCall{ctx: ctx, client: client}
	t.mu.Lock()
	t.m[tok] = c
	t.mu.Unlock()
	return tok, c
}

func (t *callTable) remove(tok string) {
	t.mu.Lock()
	delete(t.m, tok)
	t.mu.Unlock()
}

// drain waits until no POST is in flight, or ctx ends.
func (t *callTable) drain(ctx context.Context) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		t.mu.Lock()
		n := len(t.m)
		t.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// find returns the POST that carried req: ours is false when req did not come through this table's serveMCP
// (stdio, or another serving of the same server); call is nil when it did but its POST has already ended.
func (t *callTable) find(req mcp.Request) (call *httpCall, ours bool) {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return nil, false
	}
	tok := extra.Header.Get(callHeader)
	if !strings.HasPrefix(tok, t.prefix) {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[tok], true
}

// middleware gives each request of a session this serving owns a context that also ends when the POST that
// carried it loses its connection (ErrClientGone), when its session ends (deleted, expired, evicted), or when the
// server shuts down; and it records the sessions that initialize.
func (s *serving) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		call, ours := s.calls.find(req)
		if !ours {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		if call == nil {
			// The POST ended before the call began: its client went away.
			cancel(ErrClientGone)
		} else {
			defer context.AfterFunc(call.ctx, func() { cancel(ErrClientGone) })()
		}
		if call != nil && call.stateless {
			defer context.AfterFunc(s.base, func() { cancel(context.Cause(s.base)) })()
			ctx = context.WithValue(ctx, statelessClientKey{}, statelessClient{call.token, call.clients})
			return next(context.WithValue(ctx, statelessKey{}, true), method, req)
		}
		if method == "initialize" {
			defer context.AfterFunc(s.base, func() { cancel(context.Cause(s.base)) })()
			res, err := next(ctx, method, req)
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && err == nil && call != nil {
				if sess := s.sessions.add(ss, call.client, call.res.take()); sess != nil {
					call.created.Store(sess)
				}
			}
			return res, err
		}
		sess := s.sessions.lookup(req.GetSession().ID())
		if sess == nil {
			// Deleted, expired or closed while this request was on its way.
			cancel(ErrSessionClosed)
			return next(ctx, method, req)
		}
		defer context.AfterFunc(sess.ctx, func() { cancel(context.Cause(sess.ctx)) })()
		ctx = context.WithValue(ctx, holdKey{}, sessionRef{s.sessions, sess})
		return next(context.WithValue(ctx, sessionKey{}, sess.ctx), method, req)
	}
}
