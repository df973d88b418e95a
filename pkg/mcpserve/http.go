package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// healthObject is a server's report as the health endpoint's JSON object, which the endpoint adds its own serving
// state to.
type healthObject func() map[string]any

// asHealthObject turns a server's typed report (a protocol.FilesystemHealth or ExecutorHealth, which must encode
// as a JSON object) into the endpoint's object; nil reports nothing.
func asHealthObject[H any](report func() H) healthObject {
	if report == nil {
		return nil
	}
	return func() map[string]any {
		var m map[string]any
		b, err := json.Marshal(report())
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil {
			return map[string]any{"report_error": err.Error()}
		}
		return m
	}
}

// serving is the HTTP side of a server: the MCP endpoint at /mcp and the health endpoint at /healthz, with the
// session table and the per-call contexts.
//
// The MCP endpoint is guarded in layers, outermost first: the Host header must name this machine (or an allowed
// host), which stops DNS rebinding even when listening on all interfaces; cross-origin browser requests are refused
// unless their origin is allowed (http.CrossOriginProtection: Sec-Fetch-Site, else Origin against Host); the bearer
// token is checked when one is configured; the body is capped; then sessions are counted (a new one past the cap
// closes the least recently used idle one, or is refused) and each POST is tied to the calls it carries. The health
// endpoint is open: it says nothing secret.
type serving struct {
	cfg        Config
	logger     *slog.Logger
	mux        *http.ServeMux
	streamable *mcp.StreamableHTTPHandler // 2025-11-25 and earlier: sessions
	stateless  *mcp.StreamableHTTPHandler // 2026-07-28 and later: no sessions (stateless.go)
	sessions   *sessions
	calls      *callTable
	base       context.Context
	cancel     context.CancelCauseFunc
	stopReaper context.CancelFunc
	closing    atomic.Bool
	ln         atomic.Pointer[connLimiter] // for /healthz; nil when not served by Start
	activity   activity
	ids        *idStandIns
}

// newServing serves srv; token is the bearer token the MCP endpoint requires, "" for none (settled by Start).
func newServing(srv *mcp.Server, cfg Config, token string, health healthObject, logger *slog.Logger) *serving {
	base, cancel := context.WithCancelCause(context.Background())
	s := &serving{
		cfg:    cfg,
		logger: logger,
		streamable: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
			Logger:              logger,
			MaxRequestBodyBytes: cfg.MaxRequestBytes,
			// hostCheck below does the SDK's DNS-rebinding check on every listen address, not only on loopback,
			// and admits the configured extra hosts, which the SDK's own check would refuse.
			DisableLocalhostProtection: true,
			// Idle sessions are expired by the session table, which cancels their calls first: the SDK's own
			// SessionTimeout closes a session by waiting for its calls to return.
		}),
		stateless: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
			Stateless:                  true,
			Logger:                     logger,
			MaxRequestBodyBytes:        cfg.MaxRequestBytes,
			DisableLocalhostProtection: true,
			// Under 2026-07-28 the POST is the request's whole life: a client that drops it has given up the call.
			PropagateRequestCancellation: true,
		}),
		sessions: newSessions(base, cfg, logger),
		calls:    newCallTable(),
		ids:      newIDStandIns(),
		base:     base,
		cancel:   cancel,
	}
	srv.AddReceivingMiddleware(s.middleware)
	// Outermost: a tool result is encoded once when the POST that carried its call is there to write it (once.go).
	srv.AddReceivingMiddleware(encodeOnce(func(_ context.Context, req mcp.Request) bool {
		call, ours := s.calls.find(req)
		return ours && call != nil
	}))
	reapCtx, stop := context.WithCancel(context.Background())
	s.stopReaper = stop
	go s.sessions.reap(reapCtx)
	go s.activity.releaseWhenIdle(reapCtx)

	cop := http.NewCrossOriginProtection()
	for _, o := range cfg.AllowedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			logger.Warn("ignoring allowed origin", "origin", o, "error", err)
		}
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpError(w, http.StatusForbidden, "cross-origin request refused: origin "+r.Header.Get("Origin")+" is not allowed (see -allowed-origins)")
	}))
	var mcpHandler http.Handler = cop.Handler(http.HandlerFunc(s.serveMCP))
	if token != "" {
		mcpHandler = bearer(token, mcpHandler)
	}
	mux := http.NewServeMux()
	mux.Handle(protocol.EndpointPath, hostCheck(cfg.AllowedHosts, mcpHandler))
	// The health endpoint takes no token (container and cluster probes read it), but the same Host check as /mcp:
	// a page the browser loaded from a rebinding name must not read it either.
	mux.Handle(protocol.HealthPath, hostCheck(cfg.AllowedHosts, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := map[string]any{"status": "ok"}
		if health != nil {
			maps.Copy(body, health())
		}
		body["sessions"] = map[string]any{"live": s.sessions.count(), "max": cfg.MaxSessions, "idle_timeout_s": int(cfg.SessionIdleTimeout.Seconds())}
		if ln := s.ln.Load(); ln != nil {
			body["connections"] = map[string]any{"open": ln.open(), "max": cfg.MaxConnections}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	})))
	// OAuth discovery and registration, where a client that got a 401 looks next: answered with what to do instead.
	for _, p := range oauthPaths {
		mux.Handle(p, hostCheck(cfg.AllowedHosts, http.HandlerFunc(noOAuth)))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint %q: MCP is served at %s, health at %s", r.URL.Path, protocol.EndpointPath, protocol.HealthPath))
	})
	s.mux = mux
	return s
}

// ServeHTTP marks the connection busy while a request is served and bounds each write to the client.
func (s *serving) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.activity.touch()
	defer markBusy(r)()
	sw := newStallWriter(w, s.cfg.WriteStallTimeout)
	// Re-armed for the server's own final flush after the handler returns.
	defer sw.arm()
	s.mux.ServeHTTP(sw, r)
}

// serveMCP counts the request against its session and ties the calls of a POST to the POST's connection.
func (s *serving) serveMCP(w http.ResponseWriter, r *http.Request) {
	if s.closing.Load() {
		w.Header().Set("Connection", "close")
		httpError(w, http.StatusServiceUnavailable, "the server is shutting down")
		return
	}
	r.Header.Del(callHeader)
	if statelessRequest(r) {
		s.serveStateless(w, r)
		return
	}
	sid := r.Header.Get(sessionHeader)
	client := clientAddr(r)
	var sess *session
	var res *reservation
	switch {
	case sid == "" && r.Method == http.MethodPost:
		if status, refusal := s.sessions.reserve(client); refusal != "" {
			w.Header().Set("Retry-After", "5")
			httpError(w, status, refusal)
			return
		}
		res = &reservation{}
		defer func() {
			if res.take() { // no session was made of it
				s.sessions.release(client)
			}
		}()
	case sid != "":
		if r.Method == http.MethodDelete {
			// The session's calls are cancelled and the session closed in the background: the answer does not
			// wait for them (the go-sdk's own DELETE waits for every call to return).
			if s.sessions.close(sid, ErrSessionDeleted) {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		sess = s.sessions.enter(sid)
		if sess == nil {
			// Expired, deleted or never known: the go-sdk may still be closing it, but it is gone for the client.
			httpError(w, http.StatusNotFound, "session not found: it expired, was deleted or was closed to make room; initialize a new one")
			return
		}
		defer s.sessions.leave(sess)
	}
	if r.Method == http.MethodPost {
		var call *httpCall
		var end func()
		if w, call, end = s.startPOST(w, r, sid, sess); end == nil {
			return
		}
		call.res = res
		defer func() {
			end()
			if created := call.created.Load(); created != nil {
				s.sessions.touch(created)
			}
		}()
	}
	s.streamable.ServeHTTP(w, r)
}

// startPOST gives the SDK a POST's body with its JSON-RPC ids kept exact (prepareIDs) and ties the calls it carries
// to the POST (the call header). It returns the writer to serve the POST with, its call, and what ends them when it
// is served; a nil end when the POST was answered here.
func (s *serving) startPOST(w http.ResponseWriter, r *http.Request, sid string, sess *session) (http.ResponseWriter, *httpCall, func()) {
	rw, ok := s.prepareIDs(w, r, sid, sess)
	if !ok {
		return w, nil, nil
	}
	if rw.restore != nil {
		w = idRestoringWriter{ResponseWriter: w, restore: rw.restore}
	}
	tok, call := s.calls.add(r.Context(), clientAddr(r))
	call.token, call.clients = clientOf(r.Context())
	r.Header.Set(callHeader, tok)
	return splicingWriter{w}, call, func() { s.calls.remove(tok); rw.release() }
}

// prepareIDs reads the body of a POST and gives the SDK in its place one whose JSON-RPC ids it keeps exact
// (ids.go), or answers the POST itself (a batch it refuses) and reports false.
func (s *serving) prepareIDs(w http.ResponseWriter, r *http.Request, sid string, sess *session) (idRewrite, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes (-max-request-bytes)", tooLarge.Limit))
		} else {
			httpError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		return idRewrite{}, false
	}
	version := r.Header.Get(protocolVersionHeader)
	if version == "" && sess != nil {
		// A client may leave the header out; the session's version still holds (the SDK would take 2025-03-26).
		if p := sess.ss.InitializeParams(); p != nil {
			version = p.ProtocolVersion
		}
	}
	rw, refusal := s.ids.prepare(body, sid, version)
	if refusal != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(refusal.status)
		_, _ = w.Write(refusal.body)
		return idRewrite{}, false
	}
	r.Body = io.NopCloser(bytes.NewReader(rw.body))
	r.ContentLength = int64(len(rw.body))
	return rw, true
}

// shutdown ends every call and session at once (commands are killed, not awaited), then stops the HTTP server,
// giving responses until ctx ends to be written.
func (s *serving) shutdown(ctx context.Context, hs *http.Server) error {
	s.closing.Store(true)
	s.cancel(ErrShutdown)
	s.stopReaper()
	// The cancelled calls return at once (a killed command's result says exit_code -1); their POSTs end when the
	// results are written. Closing the sessions before that would drop the results: the go-sdk writes nothing on
	// a closing session.
	s.calls.drain(ctx)
	s.sessions.shutdown(ctx)
	if err := hs.Shutdown(ctx); err != nil {
		// Streams that outlive the grace period are cut.
		return hs.Close()
	}
	return nil
}

// clientAddr is the address a request came from, without its port: the key of the per-client session cap. A
// forwarded-for header is not believed (anyone may send one).
func clientAddr(r *http.Request) string {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap().String()
	}
	return r.RemoteAddr
}

// hostCheck refuses requests whose Host header is not this machine's loopback name or an allowed host. Browsers
// send the attacker's name in Host after a DNS rebinding, so this holds whatever address the server listens on.
func hostCheck(allowed []string, next http.Handler) http.Handler {
	ok := map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}
	for _, h := range allowed {
		ok[strings.ToLower(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(strings.ToLower(host), "[]")
		if !ok[host] {
			httpError(w, http.StatusForbidden, fmt.Sprintf("Host %q is not allowed: use localhost or 127.0.0.1, or start the server with -allowed-hosts", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // "<token>" as a person reads it, not "\u003ctoken\u003e"
	_ = enc.Encode(map[string]string{"error": msg})
}
