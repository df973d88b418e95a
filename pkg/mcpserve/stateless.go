package mcpserve

import (
	"context"
	"net/http"
)

// Two protocol eras on one endpoint. MCP 2025-11-25 (and earlier) is stateful over streamable HTTP: initialize,
// then every request carries the Mcp-Session-Id the server gave. MCP 2026-07-28 (SEP-2575, SEP-2567) is stateless:
// no initialize (server/discover instead), no session ID, and every request names its version twice, in its
// params' _meta (io.modelcontextprotocol/protocolVersion) and in the MCP-Protocol-Version header, which must agree.
//
// The go-sdk (v1.8.0) serves one era per handler: a stateful StreamableHTTPHandler refuses a 2026-07-28 request
// (-32022, "this server is stateful"), and a stateless one ignores Mcp-Session-Id and serves every old-era request
// in a throwaway session (no GET stream, no DELETE, nothing that outlives the POST). So serving holds one of each
// over the same *mcp.Server and routes each request by its MCP-Protocol-Version header, which 2026-07-28 requires on
// every request and the SDK checks against the _meta: 2026-07-28 or later goes to the stateless handler, whatever
// session ID it carries (the new era has none; one sent anyway names nothing there); everything else to the
// stateful one, sessions as before. A request whose _meta says 2026-07-28 but whose header does not is the
// stateful handler's, which answers it with the SDK's -32022 and the versions it speaks.

// StatelessVersion is the first protocol version without sessions.
const StatelessVersion = "2026-07-28"

// statelessRequest reports whether r speaks a stateless protocol version. Versions are dates, so they compare as
// strings, as the go-sdk compares them.
func statelessRequest(r *http.Request) bool {
	return r.Header.Get(protocolVersionHeader) >= StatelessVersion
}

// statelessKey marks the context of a call that came in a stateless request.
type statelessKey struct{}

// Stateless reports whether the tool call ctx belongs to came in a stateless request (MCP 2026-07-28 or later over
// streamable HTTP): there is no session to scope its work to, so what must outlive the call (a background process,
// a kept output) has to be reached through a handle the call returns. Over stdio, and for 2025-11-25 sessions, it
// is false: the session is the scope.
func Stateless(ctx context.Context) bool {
	v, _ := ctx.Value(statelessKey{}).(bool)
	return v
}

// serveStateless serves a 2026-07-28 request. It has no session to count or enter; its POST's calls are tied to
// the POST's connection and to shutdown, as a session's are (middleware), and its JSON-RPC ids are kept exact.
// GET and DELETE, which the era removed, get the SDK's 405.
func (s *serving) serveStateless(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		var call *httpCall
		var end func()
		if w, call, end = s.startPOST(w, r, "", nil); end == nil {
			return
		}
		call.stateless = true
		defer end()
	}
	s.stateless.ServeHTTP(w, r)
}
