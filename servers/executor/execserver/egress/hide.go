package egress

// The real value never reaches a command through a response either. A secret's host may hand the value back: an
// endpoint that echoes the request (a debugging service, an error page quoting its headers), a token-introspection
// call. A command that reads it holds the value, which it could then send where the proxy cannot see (a tunnel to
// another host) or transformed. So in a tunnel the proxy decrypts, every secret's real value in a response — its
// headers and its body, as they stream — is put back as that secret's placeholder before the command reads it.
// To see the body at all the proxy asks the upstream for it uncompressed (Accept-Encoding: identity, which every
// server must accept); a body that comes compressed all the same could hide the value, so it is not handed on: the
// command gets a 502 that says why. A body changed in length goes on chunked (HTTP/1.1) or ended by the close.
// What stays possible: a value the host hands back transformed (base64, split, reversed) is not the value.

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// askUncompressed makes req ask its upstream for an uncompressed response, so that the value can be found in it.
func askUncompressed(req *http.Request) { req.Header.Set("Accept-Encoding", "identity") }

// hideValues puts the placeholder in place of every secret's real value in resp, a response to req from a secret's
// host; false, with resp untouched, when its body is compressed and so cannot be searched.
func (in *interceptor) hideValues(req *http.Request, resp *http.Response) bool {
	for k, vs := range resp.Header {
		for i, v := range vs {
			resp.Header[k][i] = in.hideIn(v)
		}
	}
	if req.Method == http.MethodHead || resp.Body == nil || resp.Body == http.NoBody || resp.ContentLength == 0 {
		return true
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return false
	}
	resp.Trailer = nil // never searched: the body's end would have to hold them back
	resp.Body = readCloser{newValueHider(resp.Body, in.secrets), resp.Body}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	resp.TransferEncoding = nil
	if resp.ProtoAtLeast(1, 1) {
		resp.TransferEncoding = []string{"chunked"}
	} else {
		resp.Close = true
	}
	return true
}

// compressedRefusal is what a command gets in place of a response from a secret's host whose body came compressed.
func compressedRefusal(host string, port int, encoding string) string {
	body := fmt.Sprintf("goalbox egress proxy: the response of %s:%d came with Content-Encoding %q although the proxy asked for none: "+
		"the proxy must read a secret's host's responses to keep the secret's real value out of the sandbox, and cannot read this one\n", host, port, encoding)
	return fmt.Sprintf("HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n"+
		"X-Goalbox-Egress-Rule: secret\r\n\r\n%s", len(body), body)
}

// hideIn is s with every secret's real value replaced by its placeholder.
func (in *interceptor) hideIn(s string) string {
	for _, sec := range in.secrets {
		s = strings.ReplaceAll(s, sec.value, sec.placeholder)
	}
	return s
}

// newValueHider hands on r with every secret's real value replaced by its placeholder: each value whole in what
// was read, and the bytes after it only once none of them can begin a value (a value straddling the bytes held back
// is handed on whole, replaced).
func newValueHider(r io.Reader, secrets []Secret) *holdBack {
	keep := 0
	for _, s := range secrets {
		keep = max(keep, len(s.value)-1)
	}
	return &holdBack{r: r, chunk: make([]byte, 32<<10), edit: func(raw []byte, end bool) ([]byte, int, error) {
		n := len(raw)
		if !end {
			n = max(n-keep, 0)
		}
		for _, s := range secrets {
			for i := 0; ; {
				j := bytes.Index(raw[i:], []byte(s.value))
				if j < 0 || i+j >= n {
					break
				}
				i += j + len(s.value)
				n = max(n, i)
			}
		}
		out := raw[:n]
		for _, s := range secrets {
			out = bytes.ReplaceAll(out, []byte(s.value), []byte(s.placeholder))
		}
		return out, n, nil
	}}
}
