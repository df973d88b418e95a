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
	"syscall"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
		return nil, fmt.Errorf("audit log: %w", err)
	}
	Audit(srv, name, f)
	return f, nil
}

// Run serves srv as cfg says — one client on stdin/stdout, or streamable HTTP on cfg.Addr — until ctx is done or
// SIGINT/SIGTERM arrives, then shuts down gracefully.
func Run(ctx context.Context, srv *mcp.Server, name string, cfg Config, health HealthFunc, logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg = cfg.withDefaults()
	audit, err := OpenAudit(srv, name, cfg)
	if err != nil {
		return err
	}
	defer audit.Close()

	if cfg.Stdio {
		logger.Info("serving on stdio", "server", name)
		err := srv.Run(ctx, stdioTransport(os.Stdin, os.Stdout, cfg.MaxRequestBytes))
		if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	hs := newHTTPServer(Handler(srv, cfg, health, logger), logger)
	logger.Info("serving", "server", name, "url", "http://"+ln.Addr().String()+protocol.EndpointPath,
		"health", "http://"+ln.Addr().String()+protocol.HealthPath, "token", cfg.Token != "")
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down", "server", name)
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		// Streams that outlive the grace period (a GET notification stream) are cut.
		_ = hs.Close()
	}
	return nil
}

func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// Running is a server started in-process by Start.
type Running struct {
	// URL is the MCP endpoint, e.g. http://127.0.0.1:41234/mcp.
	URL string
	// Addr is the listen address.
	Addr string
	hs   *http.Server
}

// Start serves srv over HTTP on cfg.Addr (use "127.0.0.1:0" for a free port) in the background and returns at
// once. Close stops it. The agent uses this to run both servers in its own process.
func Start(srv *mcp.Server, cfg Config, health HealthFunc, logger *slog.Logger) (*Running, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	hs := newHTTPServer(Handler(srv, cfg, health, logger), logger)
	go func() { _ = hs.Serve(ln) }()
	addr := ln.Addr().String()
	return &Running{URL: "http://" + addr + protocol.EndpointPath, Addr: addr, hs: hs}, nil
}

// Close stops a server started by Start, giving in-flight requests a moment to finish.
func (r *Running) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := r.hs.Shutdown(ctx); err != nil {
		return r.hs.Close()
	}
	return nil
}
