package mcpserve

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HealthFunc reports a server's state for the health endpoint: what it serves and what confinement is active.
type HealthFunc func() map[string]any

// Handler is the HTTP side of a server: the MCP endpoint at /mcp and the health endpoint at /healthz.
//
// The MCP endpoint is guarded in layers, outermost first: the Host header must name this machine (or an allowed
// host), which stops DNS rebinding even when listening on all interfaces; cross-origin browser requests are refused
// unless their origin is allowed (http.CrossOriginProtection: Sec-Fetch-Site, else Origin against Host); the bearer token is checked when one is configured; the body is capped. The
// health endpoint is open: it says nothing secret.
func Handler(srv *mcp.Server, cfg Config, health HealthFunc, logger *slog.Logger) http.Handler {
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Logger:              logger,
		MaxRequestBodyBytes: cfg.MaxRequestBytes,
		// hostCheck below does the SDK's DNS-rebinding check on every listen address, not only on loopback, and
		// admits the configured extra hosts, which the SDK's own check would refuse.
		DisableLocalhostProtection: true,
	})
	cop := http.NewCrossOriginProtection()
	for _, o := range cfg.AllowedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			logger.Warn("ignoring allowed origin", "origin", o, "error", err)
		}
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpError(w, http.StatusForbidden, "cross-origin request refused: origin "+r.Header.Get("Origin")+" is not allowed (see -allowed-origins)")
	}))
	var mcpHandler http.Handler = cop.Handler(streamable)
	if cfg.Token != "" {
		mcpHandler = bearer(cfg.Token, mcpHandler)
	}
	mux := http.NewServeMux()
	mux.Handle(protocol.EndpointPath, hostCheck(cfg.AllowedHosts, mcpHandler))
	mux.HandleFunc(protocol.HealthPath, func(w http.ResponseWriter, r *http.Request) {
		body := map[string]any{"status": "ok"}
		if health != nil {
			for k, v := range health() {
				body[k] = v
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint %q: MCP is served at %s, health at %s", r.URL.Path, protocol.EndpointPath, protocol.HealthPath))
	})
	return mux
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

// bearer requires "Authorization: Bearer <token>". The scheme is case-insensitive and may be followed by more than
// one space (RFC 9110 section 11.1); the token is compared in constant time.
func bearer(token string, next http.Handler) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimLeft(got, " ")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="goalbox"`)
			httpError(w, http.StatusUnauthorized, "missing or wrong bearer token: send Authorization: Bearer <token>")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
