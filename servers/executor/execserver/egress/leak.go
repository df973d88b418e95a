package egress

// The real value of a secret never leaves toward another host in a request the proxy sees. A command should never
// hold the value (it gets a placeholder), but one can obtain it: from a secret's host that echoes a request back,
// or an error page quoting it. Whatever it then sends through the proxy is searched before it goes: a plain-HTTP
// request to any host (no value goes in clear, not even to its own host) and a decrypted request to a secret's host
// for the values of the other secrets, in the request line and every header (Basic credentials decoded), the URL
// also percent-decoded, the CONNECT target's name (a name under an allowed *.domain would carry the value to its DNS
// servers), and the body and its trailers. A header's name is searched case aside: net/http gives it its canonical
// case, which keeps a lower-case hex value as it is and changes little of another. The first leakScanBytes of a body are read before the request is sent, so a value there
// is refused with a 403; past them the body is searched as it streams, and a value found cuts the request, with no
// byte of the value sent. What the proxy cannot see is not searched: a tunnel to a host without a secret is
// encrypted end to end, and a value transformed in any way (base64 outside Basic, compression, reversal) is not
// the value.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// leakScanBytes is how much of a request's body is read and searched before the request is sent: the bodies of
// API calls fit many times over, and 256 connections holding one each hold 16 MiB.
const leakScanBytes = 64 << 10

var errLeak = errors.New("egress: the request body carries a secret's real value toward a host it is not for")

// guarded are the secrets whose real value may not go to host (plain: over plain HTTP, where none may go).
func (in *interceptor) guarded(host string, plain bool) []*Secret {
	if in == nil {
		return nil
	}
	var out []*Secret
	for i, s := range in.secrets {
		if plain || !s.isFor(host) {
			out = append(out, &in.secrets[i])
		}
	}
	return out
}

// leakedInName says which secret's value the name host carries, case aside (names are case-insensitive).
func (in *interceptor) leakedInName(host string) *Secret {
	for _, s := range in.guarded("", true) {
		if indexFold(host, s.value) >= 0 {
			return s
		}
	}
	return nil
}

// leaked says which guarded secret's real value req carries toward host, in its request line, headers, trailers or
// the first leakScanBytes of its body; a longer body is left wrapped in a leakScanner that cuts the request where it
// finds a value (its trailers searched at the body's end), and calls cut. req.Body is replaced by one that gives the
// same bytes.
func (in *interceptor) leaked(req *http.Request, host string, plain bool, cut func(*Secret)) (*Secret, error) {
	secrets := in.guarded(host, plain)
	if len(secrets) == 0 {
		return nil, nil
	}
	text := headerText(req)
	if u, err := url.PathUnescape(req.URL.String()); err == nil {
		text += "\n" + u
	}
	if u, err := url.QueryUnescape(req.URL.RawQuery); err == nil {
		text += "\n" + u
	}
	if s := carried(secrets, text, req.Header); s != nil {
		return s, nil
	}
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	head, err := io.ReadAll(io.LimitReader(req.Body, leakScanBytes+1))
	if err != nil {
		return nil, err
	}
	for _, s := range secrets {
		if bytes.Contains(head, []byte(s.value)) {
			return s, nil
		}
	}
	orig := req.Body
	if len(head) <= leakScanBytes {
		req.Body = readCloser{bytes.NewReader(head), orig}
		return carried(secrets, fieldValues(req.Trailer), req.Trailer), nil // read with the body's end
	}
	trailers := func() *Secret { return carried(secrets, fieldValues(req.Trailer), req.Trailer) }
	req.Body = readCloser{newLeakScanner(io.MultiReader(bytes.NewReader(head), orig), secrets, cut, trailers), orig}
	return nil, nil
}

// carried says which of secrets text (values, searched as they are) or the names of fields (case aside) carry.
func carried(secrets []*Secret, text string, fields http.Header) *Secret {
	for _, s := range secrets {
		if strings.Contains(text, s.value) {
			return s
		}
		for name := range fields {
			if indexFold(name, s.value) >= 0 {
				return s
			}
		}
	}
	return nil
}

// refuseLeak searches req, toward host:port (plain: over plain HTTP), for a secret's real value, and refuses it
// with a 403; true when it did, or when the body could not be read (the client is gone). A value past the first
// leakScanBytes of the body cuts the request as it streams, and is logged and listed the same way.
func (p *Proxy) refuseLeak(w io.Writer, s *Session, req *http.Request, host string, port int, plain bool) bool {
	if p.leakCheckOff.Load() || len(p.secrets.guarded(host, plain)) == 0 {
		return false
	}
	continueEarly(w, req) // the body is read now: a client waiting for "100 Continue" would wait a second for nothing
	r := func(sec *Secret) *refusal {
		return &refusal{status: http.StatusForbidden, host: host, port: port, rule: "secret", denied: true, detailed: true,
			reason: "the request carries the real value of the secret " + sec.Name + ", which goes only to " + strings.Join(sec.Hosts, ", ") +
				" and only over HTTPS, where the proxy puts it in place of $" + sec.Name + "'s placeholder"}
	}
	sec, err := p.secrets.leaked(req, host, plain, func(sec *Secret) { p.refuse(io.Discard, s, r(sec)) })
	if sec != nil {
		p.refuse(w, s, r(sec))
	}
	return sec != nil || err != nil
}

// redact puts $NAME in place of each secret's real value in s, case aside: a refusal names the host it refused,
// and a host name may be made of the value, which no log line or result may hold.
func (in *interceptor) redact(s string) string {
	if in == nil {
		return s
	}
	for _, sec := range in.secrets {
		for i := indexFold(s, sec.value); i >= 0; i = indexFold(s, sec.value) {
			s = s[:i] + "$" + sec.Name + s[i+len(sec.value):]
		}
	}
	return s
}

// indexFold is the first index of sub in s, ASCII case aside (-1 when none).
func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

type readCloser struct {
	io.Reader
	io.Closer
}

// newLeakScanner hands on r but cuts it (errLeak, and cut) where it finds one of secrets' real values, before any
// byte of the value has been handed on. At r's end it asks atEnd (the trailers, which follow the body), so that a
// value there cuts the request before they are written.
func newLeakScanner(r io.Reader, secrets []*Secret, cut func(*Secret), atEnd func() *Secret) *holdBack {
	keep := 0
	for _, s := range secrets {
		keep = max(keep, len(s.value)-1)
	}
	return &holdBack{r: r, chunk: make([]byte, 32<<10), edit: func(raw []byte, end bool) ([]byte, int, error) {
		found := slices.IndexFunc(secrets, func(s *Secret) bool { return bytes.Contains(raw, []byte(s.value)) })
		var s *Secret
		if found >= 0 {
			s = secrets[found]
		} else if end && atEnd != nil {
			s = atEnd()
		}
		if s != nil {
			cut(s)
			return nil, 0, errLeak
		}
		n := len(raw)
		if !end {
			n = max(n-keep, 0)
		}
		return raw[:n], n, nil
	}}
}

// holdBack hands on what it reads from r once edit has seen it, so that edit can hold back the last bytes, which
// could begin a value the next read completes, and see every value whole before any byte of it is handed on. edit
// gets the bytes read and not yet handed on, and whether r has ended; it returns what to hand on for the first
// n of them (the rest it gets again, with more), or an error to end with at once.
type holdBack struct {
	r     io.Reader
	edit  func(raw []byte, end bool) (out []byte, n int, err error)
	raw   []byte // read, not yet handed to edit's out
	out   []byte // edited, not yet handed on
	chunk []byte
	err   error
}

func (h *holdBack) Read(p []byte) (int, error) {
	for {
		if len(h.out) > 0 {
			n := copy(p, h.out)
			h.out = h.out[n:]
			return n, nil
		}
		if h.err != nil {
			return 0, h.err
		}
		n, err := h.r.Read(h.chunk)
		h.raw = append(h.raw, h.chunk[:n]...)
		out, used, editErr := h.edit(h.raw, err == io.EOF)
		h.out = append(h.out[:0], out...)
		h.raw = append(h.raw[:0], h.raw[used:]...)
		h.err = err
		if editErr != nil {
			h.out, h.err = nil, editErr
		} else if err != nil && len(h.raw) > 0 {
			h.err = fmt.Errorf("egress: %w with %d bytes held back", err, len(h.raw))
		}
	}
}
