package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// console is where Run prints what a person starting a server needs (the token, or the warning without one): stderr,
// as stdout may be the stdio transport. Tests replace it.
var console io.Writer = os.Stderr

// ShutdownGrace is how long in-flight requests get to finish after SIGINT/SIGTERM.
const ShutdownGrace = 10 * time.Second

// NewLogger is the servers' structured logger: JSON lines on stderr (stdout may carry the stdio transport).
func NewLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// OpenAudit attaches the audit log named by cfg.AuditLog to srv, if any. The returned closer is never nil.
func OpenAudit(srv *mcp.Server, name string, cfg Config) (io.Closer, error) {
	switch cfg.AuditLog {
	case "":
		return io.NopCloser(nil), nil
	case "-":
		Audit(srv, name, os.Stderr)
		return io.NopCloser(nil), nil
	}
	f, err := os.OpenFile(cfg.AuditLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, ConfigError(fmt.Errorf("audit log: %w", err))
	}
	Audit(srv, name, f)
	return f, nil
}

// Run serves srv as cfg says — one client on stdin/stdout, or streamable HTTP on cfg.Addr — until ctx is done or
// SIGINT/SIGTERM arrives, then shuts down: running calls are cancelled (commands killed), sessions closed, and
// responses given ShutdownGrace to be written. health is the server's report for the health endpoint (see Start).
func Run[H any](ctx context.Context, srv *mcp.Server, name string, cfg Config, health func() H, logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg = cfg.withDefaults()
	audit, err := OpenAudit(srv, name, cfg)
	if err != nil {
		return err
	}
	defer audit.Close()

	if cfg.Stdio {
		// One client, whose calls come mostly one after another: on one P a call is read, handled and answered by
		// one thread without waking another, which cuts the CPU of a call by a third to a half
		// (docs/BENCHMARKS.md). A GOMAXPROCS in the environment is the user's choice and is kept.
		if os.Getenv("GOMAXPROCS") == "" {
			runtime.GOMAXPROCS(1)
		}
		in, out, restore := stdioFiles()
		defer restore()
		logger.Info("serving on stdio", "server", name, "gomaxprocs", runtime.GOMAXPROCS(0))
		return ServeStdio(ctx, srv, in, out, cfg)
	}

	r, err := listen(srv, cfg, health, logger)
	if err != nil {
		return err
	}
	tokenFile := ""
	switch r.tokenState {
	case tokenGenerated:
		// Written before the first request is answered: whoever waits for the health endpoint finds the file.
		if writingTokenFile != nil {
			writingTokenFile(r.Addr)
		}
		file, remove, err := writeTokenFile(cfg.TokenFile, name, r.Addr, r.Token)
		if err != nil {
			r.Close()
			return ConfigError(err)
		}
		defer remove()
		tokenFile = file
		announceToken(console, name, r.URL, r.Token, file)
	case tokenOff:
		logger.Warn("serving without a token (-token none): every user of this machine who reaches the port can use this server", "server", name, "url", r.URL)
		warnNoToken(console, name, r.URL)
	}
	logger.Info("serving", "server", name, "url", r.URL, "health", "http://"+r.Addr+protocol.HealthPath, "token", r.tokenState.String(), "token_file", tokenFile,
		"max_sessions", cfg.MaxSessions, "session_idle_timeout", cfg.SessionIdleTimeout.String(), "max_connections", cfg.MaxConnections)
	r.serve()
	select {
	case err := <-r.errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down", "server", name)
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	_ = r.shutdown(sctx)
	return nil
}

// writingTokenFile, when set (by a test), runs just before Run writes a generated token's file.
var writingTokenFile func(addr string)

// ServeStdio serves one client on in and out (newline-delimited JSON-RPC) until in ends or ctx does; then the calls
// still running are cancelled. Run uses it with stdin and stdout for -stdio.
func ServeStdio(ctx context.Context, srv *mcp.Server, in io.Reader, out io.Writer, cfg Config) error {
	cfg = cfg.withDefaults()
	base, cancel := context.WithCancelCause(context.Background())
	defer cancel(ErrSessionClosed)
	defer context.AfterFunc(ctx, func() { cancel(ErrShutdown) })()
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if extra := req.GetExtra(); strings.HasPrefix(method, "notifications/") || (extra != nil && extra.Header != nil) {
				return next(ctx, method, req) // not a stdio request
			}
			ctx, cancelCall := context.WithCancelCause(ctx)
			defer cancelCall(nil)
			defer context.AfterFunc(base, func() { cancelCall(context.Cause(base)) })()
			return next(context.WithValue(ctx, sessionKey{}, context.Context(base)), method, req)
		}
	})
	err := runStdio(ctx, srv, in, out, cfg.MaxRequestBytes)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

func newHTTPServer(h *serving, cfg Config, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		// ReadTimeout covers the request (headers and body) only: net/http clears the read deadline once the body
		// is read, so a long call's response and a GET stream are not cut by it. There is deliberately no
		// WriteTimeout, which would cut them: WriteStallTimeout bounds each write instead.
		ReadTimeout:    cfg.ReadTimeout,
		IdleTimeout:    cfg.IdleTimeout,
		MaxHeaderBytes: cfg.MaxHeaderBytes,
		ConnContext:    connContext,
		ErrorLog:       slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// NoHealth is the report of a server that has nothing to say on the health endpoint beyond its serving state.
func NoHealth() struct{} { return struct{}{} }

// Running is a server started by Start.
type Running struct {
	// URL is the MCP endpoint, e.g. http://127.0.0.1:41234/mcp.
	URL string
	// Addr is the listen address.
	Addr string
	// Token is the bearer token the MCP endpoint requires: the one Config gave, or the one generated at start when
	// it gave none; "" for Config.Token NoToken. A client sends it as "Authorization: Bearer <Token>".
	Token      string
	tokenState tokenState
	hs         *http.Server
	s          *serving
	ln         *connLimiter
	errc       chan error
}

// Start serves srv over HTTP on cfg.Addr (use "127.0.0.1:0" for a free port) in the background and returns at
// once. Close stops it. The MCP endpoint requires a bearer token unless cfg.Token is NoToken: the one cfg gives, or
// else one generated here and kept in memory only (Running.Token; Run writes it to a file). health is the server's report
// for the health endpoint, a type of package protocol that encodes as a JSON object (NoHealth for none); the
// endpoint adds the serving state to it.
func Start[H any](srv *mcp.Server, cfg Config, health func() H, logger *slog.Logger) (*Running, error) {
	r, err := listen(srv, cfg, health, logger)
	if err != nil {
		return nil, err
	}
	r.serve()
	return r, nil
}

// listen is Start up to the first request: the port is open and the token settled, but nothing is answered yet
// (connections wait in the backlog), so Run can write the token file before a client that saw the health endpoint
// answer goes looking for it.
func listen[H any](srv *mcp.Server, cfg Config, health func() H, logger *slog.Logger) (*Running, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	inner, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	return prepare(inner, srv, cfg, asHealthObject(health), logger), nil
}

// startOn is Start on a listener already open (tests give one of in-memory pipes, for testing/synctest); cfg has
// its defaults.
func startOn(inner net.Listener, srv *mcp.Server, cfg Config, health healthObject, logger *slog.Logger) *Running {
	r := prepare(inner, srv, cfg, health, logger)
	r.serve()
	return r
}

// prepare builds the server on inner without serving it yet.
func prepare(inner net.Listener, srv *mcp.Server, cfg Config, health healthObject, logger *slog.Logger) *Running {
	token, state := settleToken(cfg.Token)
	s := newServing(srv, cfg, token, health, logger)
	ln := newConnLimiter(inner, cfg.MaxConnections, logger)
	s.ln.Store(ln)
	hs := newHTTPServer(s, cfg, logger)
	return &Running{URL: "http://" + inner.Addr().String() + protocol.EndpointPath, Addr: inner.Addr().String(), Token: token, tokenState: state, hs: hs, s: s, ln: ln, errc: make(chan error, 1)}
}

// serve answers requests from here on, in the background.
func (r *Running) serve() { go func() { r.errc <- r.hs.Serve(r.ln) }() }

// Close stops a server started by Start: running calls are cancelled at once and responses get a moment to be
// written.
func (r *Running) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return r.shutdown(ctx)
}

func (r *Running) shutdown(ctx context.Context) error {
	// No new connections from here on; then end the calls and sessions, then the connections.
	_ = r.ln.Close()
	return r.s.shutdown(ctx, r.hs)
}
