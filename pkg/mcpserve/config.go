// Package mcpserve is what the two goalbox servers share around their tools: configuration from flags and the
// environment, the streamable HTTP endpoint with its Host, Origin and token checks, the health endpoint, stdio, the
// audit log, and graceful shutdown. A server builds its *mcp.Server and hands it to Run (for a main) or Start (to
// embed it in-process, as the agent and tests do).
package mcpserve

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// Config is what both servers take. Flags win over the environment, which wins over the defaults; each field's
// environment variable is the server's prefix (GOALBOX_FS_ or GOALBOX_EXEC_) plus the env tag.
type Config struct {
	// Addr is the HTTP listen address.
	Addr string `env:"ADDR"`
	// Workspace is the folder the server is confined to; created if missing.
	Workspace string `env:"WORKSPACE"`
	// Stdio serves one client on stdin/stdout instead of HTTP.
	Stdio bool `env:"STDIO"`
	// Token, when set, is required as "Authorization: Bearer <token>" on the MCP endpoint.
	Token string `env:"TOKEN"`
	// AuditLog, when set, is a file that gets one JSON line per tool call ("-" for stderr).
	AuditLog string `env:"AUDIT_LOG"`
	// AllowedHosts are extra Host header names (without port) accepted besides localhost, 127.0.0.1 and [::1].
	// A server listening on all interfaces (in a container) needs the names clients use to reach it.
	AllowedHosts []string `env:"ALLOWED_HOSTS" envSeparator:","`
	// AllowedOrigins are extra browser origins (scheme://host[:port]) trusted for cross-origin requests.
	AllowedOrigins []string `env:"ALLOWED_ORIGINS" envSeparator:","`
	// LogLevel is debug, info, warn or error.
	LogLevel string `env:"LOG_LEVEL"`
	// MaxRequestBytes caps one HTTP request body.
	MaxRequestBytes int64 `env:"MAX_REQUEST_BYTES"`

	// SessionIdleTimeout closes an HTTP session that has had no request open for this long.
	SessionIdleTimeout time.Duration `env:"SESSION_IDLE_TIMEOUT"`
	// MaxSessions caps live HTTP sessions; past it the least recently used idle session is closed, and when every
	// session is busy a new one is refused with 503.
	MaxSessions int `env:"MAX_SESSIONS"`
	// MaxConnections caps open TCP connections; past it the least recently active connection that is not serving a
	// request is closed, and when every connection is serving one a new one gets 503.
	MaxConnections int `env:"MAX_CONNECTIONS"`
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration `env:"READ_HEADER_TIMEOUT"`
	// ReadTimeout bounds reading a whole request, headers and body. It does not apply to the response: a long tool
	// call or an SSE stream is not cut by it.
	ReadTimeout time.Duration `env:"READ_TIMEOUT"`
	// IdleTimeout closes a keep-alive connection that waits this long for its next request.
	IdleTimeout time.Duration `env:"IDLE_TIMEOUT"`
	// WriteStallTimeout fails a write to a client that has not taken any of it for this long (a client that stopped
	// reading). A response that is merely slow to come (a long command) is not affected.
	WriteStallTimeout time.Duration `env:"WRITE_STALL_TIMEOUT"`
	// MaxHeaderBytes caps a request's header block.
	MaxHeaderBytes int `env:"MAX_HEADER_BYTES"`
}

// DefaultMaxRequestBytes is large enough for a 10 MiB file write encoded as JSON.
const DefaultMaxRequestBytes = 24 << 20

// Defaults of the HTTP timeouts and header cap (docs/serving.md says why each).
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout lets the largest body (24 MiB) arrive at 0.5 MiB/s.
	DefaultReadTimeout       = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultWriteStallTimeout = 60 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
)

// Load fills cfg from the environment (variables named prefix+tag) and then from args, starting from the values
// already in cfg as defaults. extra registers a server's own flags on the same flag set; its own environment
// variables are read by the caller with env.ParseWithOptions before calling Load, so that flags win there too.
func Load(cfg *Config, prefix string, args []string, extra func(*flag.FlagSet)) (*flag.FlagSet, error) {
	*cfg = cfg.withDefaults()
	if err := env.ParseWithOptions(cfg, env.Options{Prefix: prefix}); err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "HTTP listen address (env "+prefix+"ADDR)")
	fs.StringVar(&cfg.Workspace, "workspace", cfg.Workspace, "workspace folder, created if missing (env "+prefix+"WORKSPACE)")
	fs.BoolVar(&cfg.Stdio, "stdio", cfg.Stdio, "serve one client on stdin/stdout instead of HTTP (env "+prefix+"STDIO)")
	fs.StringVar(&cfg.Token, "token", cfg.Token, "bearer token required on the MCP endpoint (env "+prefix+"TOKEN; prefer the env: flags show in ps)")
	fs.StringVar(&cfg.AuditLog, "audit-log", cfg.AuditLog, "file for a JSON line per tool call, - for stderr (env "+prefix+"AUDIT_LOG)")
	fs.Func("allowed-hosts", "comma-separated extra Host names accepted besides loopback (env "+prefix+"ALLOWED_HOSTS)", func(s string) error {
		cfg.AllowedHosts = splitList(s)
		return nil
	})
	fs.Func("allowed-origins", "comma-separated browser origins trusted for cross-origin requests (env "+prefix+"ALLOWED_ORIGINS)", func(s string) error {
		cfg.AllowedOrigins = splitList(s)
		return nil
	})
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "debug, info, warn or error (env "+prefix+"LOG_LEVEL)")
	fs.Int64Var(&cfg.MaxRequestBytes, "max-request-bytes", cfg.MaxRequestBytes, "largest HTTP request body accepted (env "+prefix+"MAX_REQUEST_BYTES)")
	fs.DurationVar(&cfg.SessionIdleTimeout, "session-idle-timeout", cfg.SessionIdleTimeout, "close an HTTP session with no request open for this long (env "+prefix+"SESSION_IDLE_TIMEOUT)")
	fs.IntVar(&cfg.MaxSessions, "max-sessions", cfg.MaxSessions, "live HTTP sessions; past it the least recently used idle one is closed, or the new one refused with 503 when all are in use (env "+prefix+"MAX_SESSIONS)")
	fs.IntVar(&cfg.MaxConnections, "max-connections", cfg.MaxConnections, "open TCP connections; past it the quietest one not serving a request is closed, or the new one answered 503 (env "+prefix+"MAX_CONNECTIONS)")
	fs.DurationVar(&cfg.ReadHeaderTimeout, "read-header-timeout", cfg.ReadHeaderTimeout, "time to send a request's headers (env "+prefix+"READ_HEADER_TIMEOUT)")
	fs.DurationVar(&cfg.ReadTimeout, "read-timeout", cfg.ReadTimeout, "time to send a whole request, headers and body; never cuts a response (env "+prefix+"READ_TIMEOUT)")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", cfg.IdleTimeout, "close a keep-alive connection idle this long between requests (env "+prefix+"IDLE_TIMEOUT)")
	fs.DurationVar(&cfg.WriteStallTimeout, "write-stall-timeout", cfg.WriteStallTimeout, "close a connection whose client takes none of a write for this long (env "+prefix+"WRITE_STALL_TIMEOUT)")
	fs.IntVar(&cfg.MaxHeaderBytes, "max-header-bytes", cfg.MaxHeaderBytes, "largest request header block (env "+prefix+"MAX_HEADER_BYTES)")
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return fs, err
	}
	if fs.NArg() > 0 {
		return fs, fmt.Errorf("unexpected arguments %q: all options are flags", fs.Args())
	}
	if cfg.Workspace == "" {
		return fs, fmt.Errorf("no workspace: give -workspace DIR or %sWORKSPACE", prefix)
	}
	if cfg.MaxRequestBytes <= 0 {
		return fs, fmt.Errorf("-max-request-bytes must be positive, got %d", cfg.MaxRequestBytes)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"session-idle-timeout", cfg.SessionIdleTimeout}, {"read-header-timeout", cfg.ReadHeaderTimeout}, {"read-timeout", cfg.ReadTimeout},
		{"idle-timeout", cfg.IdleTimeout}, {"write-stall-timeout", cfg.WriteStallTimeout}} {
		if d.v <= 0 {
			return fs, fmt.Errorf("-%s must be positive, got %v", d.name, d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"max-sessions", cfg.MaxSessions}, {"max-connections", cfg.MaxConnections}, {"max-header-bytes", cfg.MaxHeaderBytes}} {
		if n.v <= 0 {
			return fs, fmt.Errorf("-%s must be positive, got %d", n.name, n.v)
		}
	}
	return fs, nil
}

// withDefaults fills the fields a zero Config leaves unset, so that a Config built in code (tests, the agent's
// in-process servers) behaves as one loaded from flags.
func (c Config) withDefaults() Config {
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.SessionIdleTimeout == 0 {
		c.SessionIdleTimeout = DefaultSessionIdleTimeout
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.WriteStallTimeout == 0 {
		c.WriteStallTimeout = DefaultWriteStallTimeout
	}
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	return c
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
