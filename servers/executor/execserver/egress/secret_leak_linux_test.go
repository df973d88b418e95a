//go:build linux

package egress

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSecretValueNeverLeaves: a command that got hold of the real value (a secret's host echoed it back) sends it
// to another allowed host, and over plain HTTP to any: in a header, Basic credentials, the URL (as it is and
// percent-encoded), the body, past the body's first leakScanBytes, the method, a header's name, and a trailer after
// a short body and after a long one. Each is refused (a 403 naming the secret, or the request cut before the
// value's first byte) and listed; the value is in no log line or result. Positive controls: the value still goes
// to its own host over HTTPS, and with the search off every one of these requests delivers the value to
// allowed.test.
func TestSecretValueNeverLeaves(t *testing.T) {
	f := newSecretFixture(t)
	pct := ""
	for _, b := range []byte(f.real) {
		pct += fmt.Sprintf("%%%02X", b)
	}
	long := strings.Repeat("x", leakScanBytes*3) + f.real + strings.Repeat("y", 1000)
	attacks := []struct {
		name, method, url string
		header            http.Header
		body              string
	}{
		{"a header", "GET", "http://allowed.test/h", http.Header{"X-Api-Key": {f.real}}, ""},
		{"basic credentials", "GET", "http://allowed.test/b", http.Header{"Authorization": {"Basic " + basicOf("u", f.real)}}, ""},
		{"the URL", "GET", "http://allowed.test/q?t=" + f.real, nil, ""},
		{"the URL percent-encoded", "GET", "http://allowed.test/" + pct, nil, ""},
		{"the body", "POST", "http://allowed.test/p", nil, "token=" + f.real},
		{"past the body's first bytes", "POST", "http://allowed.test/long", nil, long},
		{"its own host over plain HTTP", "GET", "http://secret.test/", bearer(f.real), ""},
		{"the method", f.real, "http://allowed.test/m", nil, ""},
		{"a header's name", "GET", "http://allowed.test/n", http.Header{f.real: {"1"}}, ""},
		{"a trailer", "POST", "http://allowed.test/t", http.Header{"Trailer:X-Checksum": {f.real}}, "chunked"},
		{"a trailer after a long body", "POST", "http://allowed.test/lt", http.Header{"Trailer:X-Checksum": {f.real}}, strings.Repeat("z", leakScanBytes*2)},
	}
	run := func(s *Session) (refused []string) {
		c := f.client(s, nil)
		for _, a := range attacks {
			code, body := do(c, a.method, a.url, "", a.header, a.body)
			switch {
			case code == 403 && strings.Contains(body, "the real value of the secret TOKEN") && !strings.Contains(body, f.real):
				refused = append(refused, a.name)
			case code == 0 && len(a.body) > leakScanBytes:
				refused = append(refused, a.name) // cut as it streamed: no response
			case code != 200:
				t.Errorf("%s: %d %q", a.name, code, body)
			}
		}
		return refused
	}

	s := f.p.Begin()
	if code, body := do(f.client(s, nil), "GET", "https://secret.test/", "", bearer(f.real), ""); code != 200 || body != "secret.test: authorized\n" {
		t.Fatalf("control: the real value to its own host over HTTPS: %d %q", code, body)
	}
	if got := run(s); len(got) != len(attacks) {
		t.Errorf("refused only %q of %d attacks", got, len(attacks))
	}
	u := s.End()
	if strings.Join(u.Denied, " ") != "allowed.test:80 secret.test:80" {
		t.Errorf("network_denied %v", u.Denied)
	}
	// The cut request may have reached the upstream in part: with no byte of the value.
	if got := f.seen.String(); strings.Count(got, f.real) != 1 || strings.Count(got, f.real[:5]) != 1 {
		t.Errorf("the value, or its beginning, reached the upstream other than at secret.test over HTTPS: %q", got)
	}

	// A name made of the value is refused before it is resolved, and the value is redacted where it is told.
	s = f.p.Begin()
	pu, _ := url.Parse(s.ProxyURL(f.addr))
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	if code, body := do(c, "GET", "https://"+f.real+".allowed.test/", "", nil, ""); code != 0 || !strings.Contains(body, "Forbidden") && !strings.Contains(body, "Refused") {
		t.Errorf("CONNECT to a name made of the value: %d %q", code, body)
	}
	u = s.End()
	if strings.Join(u.Denied, " ") != "$TOKEN.allowed.test:443" {
		t.Errorf("network_denied %v", u.Denied)
	}
	if strings.Contains(f.logs.String(), f.real) {
		t.Errorf("the real value is in the log:\n%s", f.logs.String())
	}

	f.p.leakCheckOff.Store(true)
	f.seen.Reset()
	s = f.p.Begin()
	if got := run(s); len(got) != 0 {
		t.Errorf("control: with the search off, refused %q", got)
	}
	s.End()
	if got := f.seen.String(); strings.Count(got, f.real) != len(attacks) {
		t.Errorf("control: with the search off the value should reach the upstream each time; it saw %q", got)
	}
}

func basicOf(user, pass string) string {
	r, _ := http.NewRequest("GET", "http://x/", nil)
	r.SetBasicAuth(user, pass)
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}

// TestSecretValueHiddenInResponses: a secret's host hands the real value back (an echo of the request, in a header
// and twice in a long body, the last time at its very end); the command reads the placeholder in its place, every
// time. A response compressed although the proxy asked for none cannot be searched, and is a 502 saying so.
// Positive control: with the hiding off, the command reads the real value from both.
func TestSecretValueHiddenInResponses(t *testing.T) {
	f := newSecretFixture(t)
	get := func(path string) (*http.Response, string) {
		t.Helper()
		s := f.p.Begin()
		defer s.End()
		req, _ := http.NewRequest("GET", "https://secret.test"+path, nil)
		req.Header.Set("Authorization", "Bearer "+f.tok.Placeholder())
		resp, err := f.client(s, nil).Do(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := get("/echo")
	ph := "Bearer " + f.tok.Placeholder()
	if resp.StatusCode != 200 || strings.Contains(body, f.real) || body != strings.Repeat("x", 100000)+"|"+ph+"|"+ph {
		t.Errorf("the echo's body: %d, %d bytes, the value in it: %v", resp.StatusCode, len(body), strings.Contains(body, f.real))
	}
	if got := resp.Header.Get("X-Echo"); got != ph {
		t.Errorf("the echo's header: %q", got)
	}
	resp, body = get("/echo-gzip")
	if resp.StatusCode != 502 || !strings.Contains(body, `came with Content-Encoding "gzip" although the proxy asked for none`) || strings.Contains(body, f.real) {
		t.Errorf("a compressed echo: %d %q", resp.StatusCode, body)
	}
	if strings.Contains(f.logs.String(), f.real) {
		t.Errorf("the real value is in the log")
	}

	f.p.hideOff.Store(true)
	if resp, body := get("/echo"); !strings.Contains(body, f.real) || !strings.Contains(resp.Header.Get("X-Echo"), f.real) {
		t.Errorf("control: with the hiding off the echo does not hand the value back: %d bytes", len(body))
	}
	if _, body := get("/echo-gzip"); body != "Bearer "+f.real {
		t.Errorf("control: with the hiding off the compressed echo: %q", body)
	}
}
