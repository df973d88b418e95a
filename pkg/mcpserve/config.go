// Package mcpserve is what the two goalbox servers share, so that both are built one way: tool registration
// (AddTool: panic recovery, schema defaults, one-pass results), configuration from flags and the environment (Load,
// through package envflag), the streamable HTTP endpoint with its Host, Origin and token checks, the health endpoint
// (fed a server's typed protocol report), stdio, the audit log, graceful shutdown, the version from build info and
// the exit codes (ExitCode). A server builds its *mcp.Server and hands it to Run (for a main) or Start (to embed it
// in-process, as the agent and tests do).
package mcpserve

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/goalbox/goalbox/pkg/envflag"
)

// Config is what both servers take. Flags win over the environment, which wins over the defaults; each field's
// environment variable is the server's prefix (GOALBOX_FS_ or GOALBOX_EXEC_) plus the env tag.
type Config struct {
	// Addr is the HTTP listen address.
	Addr string `env:"ADDR" flag:"addr" usage:"HTTP listen address"`
	// Workspace is the folder the server is confined to; created if missing.
	Workspace string `env:"WORKSPACE" flag:"workspace" usage:"workspace folder, created if missing"`
	// AllowPersonalWorkspace lets the workspace be a home folder, the root of a disk, or a folder holding start-up
	// files or keys (.bashrc, .ssh), which are refused otherwise (personal.go).
	AllowPersonalWorkspace bool `env:"ALLOW_PERSONAL_WORKSPACE" flag:"allow-personal-workspace" usage:"allow a workspace that is a home folder, the root of a disk, or a folder holding start-up files or keys (.bashrc, .ssh), refused otherwise"`
	// Stdio serves one client on stdin/stdout instead of HTTP.
	Stdio bool `env:"STDIO" flag:"stdio" usage:"serve one client on stdin/stdout instead of HTTP"`
	// Token is required as "Authorization: Bearer <token>" on the MCP endpoint over HTTP. Empty (the default)
	// generates one at start: Run writes it to TokenFile and prints it, Start keeps it in Running.Token. NoToken
	// ("none") serves without one, which lets every user of the machine in (loopback is shared): Run warns.
	Token string `env:"TOKEN" flag:"token" usage:"bearer token required on the MCP endpoint over HTTP; several, separated by commas, are each accepted and tell stateless clients apart; default: one generated at start, printed and written to -token-file; none to serve without (any user of this machine gets in); prefer the environment variable: flags show in ps"`
	// TokenFrom is a file the token is read from at start (a mounted Secret, a token derived for this sandbox alone),
	// so that it never passes through the environment or the command line; it excludes Token.
	TokenFrom string `env:"TOKEN_FROM" flag:"token-from" usage:"file the bearer token is read from at start (a mounted Secret); as -token, without the environment or ps seeing it; excludes -token"`
	// TokenFile is where Run writes a generated token, readable by this user only; empty is DefaultTokenDir plus a
	// name per server and port.
	TokenFile string `env:"TOKEN_FILE" flag:"token-file" usage:"file a generated token is written to, mode 0600 (default $XDG_RUNTIME_DIR/goalbox, else the user cache folder/goalbox, /run/goalbox for root; one file per server and port)"`
	// AuditLog, when set, is a file that gets one JSON line per tool call ("-" for stderr).
	AuditLog string `env:"AUDIT_LOG" flag:"audit-log" usage:"file for a JSON line per tool call, - for stderr"`
	// AllowedHosts are extra Host header names (without port) accepted besides localhost, 127.0.0.1 and [::1].
	// A server listening on all interfaces (in a container) needs the names clients use to reach it.
	AllowedHosts []string `env:"ALLOWED_HOSTS" envSeparator:"," flag:"allowed-hosts" usage:"comma-separated extra Host names accepted besides loopback"`
	// AllowedOrigins are extra browser origins (scheme://host[:port]) trusted for cross-origin requests.
	AllowedOrigins []string `env:"ALLOWED_ORIGINS" envSeparator:"," flag:"allowed-origins" usage:"comma-separated browser origins trusted for cross-origin requests"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `env:"LOG_LEVEL" flag:"log-level" usage:"debug, info, warn or error"`
	// MaxRequestBytes caps one HTTP request body.
	MaxRequestBytes int64 `env:"MAX_REQUEST_BYTES" flag:"max-request-bytes" usage:"largest HTTP request body accepted"`

	// SessionIdleTimeout closes an HTTP session that has had no request open for this long, even one holding a
	// running command or process (HoldSession).
	SessionIdleTimeout time.Duration `env:"SESSION_IDLE_TIMEOUT" flag:"session-idle-timeout" usage:"close an HTTP session with no request open for this long, even one running a process"`
	// SessionUnusedTimeout closes sooner an HTTP session that holds nothing running: most clients (the TypeScript
	// SDK 1.x, LangChain) never send DELETE when they close, and their sessions would otherwise keep their kept
	// outputs for SessionIdleTimeout.
	SessionUnusedTimeout time.Duration `env:"SESSION_UNUSED_TIMEOUT" flag:"session-unused-timeout" usage:"close an HTTP session with no request open and nothing running (no background process) for this long"`
	// MaxSessions caps live HTTP sessions. Past it a new session closes the least recently used session that is
	// idle — no request open, no command or process running (HoldSession), no request for SessionKeepActive — or,
	// when there is none, is refused with 503: a flood of new sessions never closes a session in use.
	MaxSessions int `env:"MAX_SESSIONS" flag:"max-sessions" usage:"live HTTP sessions; past it the least recently used idle one (nothing running, no request for -session-keep-active) is closed, else the new one is refused with 503"`
	// SessionKeepActive is how recently a session must have had a request to be safe from being closed to make room.
	SessionKeepActive time.Duration `env:"SESSION_KEEP_ACTIVE" flag:"session-keep-active" usage:"a session with a request this recently is never closed to make room for a new one"`
	// MaxSessionsPerClient caps the live sessions of one client address, so that one client cannot take every
	// session; past it a new session of that address is refused with 429. 0 is half of MaxSessions. Every local
	// client shares the loopback address.
	MaxSessionsPerClient int `env:"MAX_SESSIONS_PER_CLIENT" flag:"max-sessions-per-client" usage:"live HTTP sessions of one client address (every local client shares loopback's); past it 429; default half of -max-sessions"`
	// MaxConnections caps open TCP connections; past it the least recently active connection that is not serving a
	// request is closed, and when every connection is serving one a new one gets 503.
	MaxConnections int `env:"MAX_CONNECTIONS" flag:"max-connections" usage:"open TCP connections; past it the quietest one not serving a request is closed, or the new one answered 503"`
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration `env:"READ_HEADER_TIMEOUT" flag:"read-header-timeout" usage:"time to send a request's headers"`
	// ReadTimeout bounds reading a whole request, headers and body. It does not apply to the response: a long tool
	// call or an SSE stream is not cut by it.
	ReadTimeout time.Duration `env:"READ_TIMEOUT" flag:"read-timeout" usage:"time to send a whole request, headers and body; never cuts a response"`
	// IdleTimeout closes a keep-alive connection that waits this long for its next request.
	IdleTimeout time.Duration `env:"IDLE_TIMEOUT" flag:"idle-timeout" usage:"close a keep-alive connection idle this long between requests"`
	// WriteStallTimeout fails a write to a client that has not taken any of it for this long (a client that stopped
	// reading). A response that is merely slow to come (a long command) is not affected.
	WriteStallTimeout time.Duration `env:"WRITE_STALL_TIMEOUT" flag:"write-stall-timeout" usage:"close a connection whose client takes none of a write for this long"`
	// MaxHeaderBytes caps a request's header block.
	MaxHeaderBytes int `env:"MAX_HEADER_BYTES" flag:"max-header-bytes" usage:"largest request header block"`
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

// ErrVersion is what Load returns for -version: the caller prints its name and Version, and exits 0.
var ErrVersion = errors.New("version asked for")

// Load fills cfg from the environment (variables named prefix+tag) and then from args, starting from the values
// already in cfg as defaults; the flags are cfg's fields, as tagged (package envflag). extra registers a server's
// own flags on the same flag set (envflag.Register, after envflag.ParseEnv, so that flags win there too). -version
// makes Load return ErrVersion; an error in what it was given is a ConfigError.
func Load(cfg *Config, prefix string, args []string, extra func(*flag.FlagSet)) (*flag.FlagSet, error) {
	fs, err := load(cfg, prefix, args, extra)
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, ErrVersion) {
		return fs, err
	}
	return fs, ConfigError(err)
}

func load(cfg *Config, prefix string, args []string, extra func(*flag.FlagSet)) (*flag.FlagSet, error) {
	*cfg = cfg.withDefaults()
	o := envflag.Options{Prefix: prefix}
	if err := envflag.ParseEnv(cfg, o); err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	envflag.Register(fs, cfg, o)
	version := fs.Bool("version", false, "print the version and exit")
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return fs, err
	}
	if *version {
		return fs, ErrVersion
	}
	if fs.NArg() > 0 {
		return fs, fmt.Errorf("unexpected arguments %q: all options are flags", fs.Args())
	}
	if cfg.Workspace == "" {
		return fs, fmt.Errorf("no workspace: give -workspace DIR or %sWORKSPACE", prefix)
	}
	if cfg.TokenFrom != "" {
		if cfg.Token != "" {
			return fs, errors.New("-token and -token-from (or their environment variables) are both given: give the token one way")
		}
		tok, err := readTokenFrom(cfg.TokenFrom)
		if err != nil {
			return fs, err
		}
		cfg.Token = tok
	}
	if cfg.Token != "" && slices.Contains(strings.Split(cfg.Token, ","), "") {
		return fs, errors.New("-token has an empty token (a stray comma): give one token, or several separated by commas, each a client of its own (docs/serving.md, Tokens)")
	}
	if !cfg.AllowPersonalWorkspace {
		if err := checkNotPersonal(cfg.Workspace); err != nil {
			return fs, err
		}
	}
	if cfg.MaxRequestBytes <= 0 {
		return fs, fmt.Errorf("-max-request-bytes must be positive, got %d", cfg.MaxRequestBytes)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"session-idle-timeout", cfg.SessionIdleTimeout}, {"session-unused-timeout", cfg.SessionUnusedTimeout}, {"session-keep-active", cfg.SessionKeepActive}, {"read-header-timeout", cfg.ReadHeaderTimeout}, {"read-timeout", cfg.ReadTimeout},
		{"idle-timeout", cfg.IdleTimeout}, {"write-stall-timeout", cfg.WriteStallTimeout}} {
		if d.v <= 0 {
			return fs, fmt.Errorf("-%s must be positive, got %v", d.name, d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"max-sessions", cfg.MaxSessions}, {"max-sessions-per-client", cfg.MaxSessionsPerClient}, {"max-connections", cfg.MaxConnections}, {"max-header-bytes", cfg.MaxHeaderBytes}} {
		if n.v <= 0 {
			return fs, fmt.Errorf("-%s must be positive, got %d", n.name, n.v)
		}
	}
	return fs, nil
}

// withDefaults fills the fields a zero Config leaves unset, so that a Config built in code (tests, the agent's
// in-process servers) behaves as one loaded from flags.
func (c Config) withDefaults() Config {
	c.LogLevel = cmp.Or(c.LogLevel, "info")
	c.MaxRequestBytes = cmp.Or(c.MaxRequestBytes, DefaultMaxRequestBytes)
	c.SessionIdleTimeout = cmp.Or(c.SessionIdleTimeout, DefaultSessionIdleTimeout)
	c.SessionUnusedTimeout = cmp.Or(c.SessionUnusedTimeout, min(DefaultSessionUnusedTimeout, c.SessionIdleTimeout))
	c.MaxSessions = cmp.Or(c.MaxSessions, DefaultMaxSessions)
	c.SessionKeepActive = cmp.Or(c.SessionKeepActive, DefaultSessionKeepActive)
	c.MaxSessionsPerClient = cmp.Or(c.MaxSessionsPerClient, max(1, c.MaxSessions/2))
	c.MaxConnections = cmp.Or(c.MaxConnections, DefaultMaxConnections)
	c.ReadHeaderTimeout = cmp.Or(c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	c.ReadTimeout = cmp.Or(c.ReadTimeout, DefaultReadTimeout)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.WriteStallTimeout = cmp.Or(c.WriteStallTimeout, DefaultWriteStallTimeout)
	c.MaxHeaderBytes = cmp.Or(c.MaxHeaderBytes, DefaultMaxHeaderBytes)
	return c
}
