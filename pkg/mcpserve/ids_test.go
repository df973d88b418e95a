package mcpserve

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Two ids above 2^53 that a float64 cannot tell apart (both round to 9007199254740992), and ids the go-sdk would
// give back as other numbers.
const (
	bigA = "9007199254740993"
	bigB = "9007199254740995"
)

// initAt is an initialize for protocol version v.
func initAt(v string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + v + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
}

// postRaw posts body on session sid (version header v unless ""), and returns the status and body.
func postRaw(t *testing.T, c *rawClient, sid, v, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if v != "" {
		req.Header.Set("Mcp-Protocol-Version", v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func sessionAt(t *testing.T, c *rawClient, v string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", c.url, strings.NewReader(initAt(v)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize at %s: %d", v, resp.StatusCode)
	}
	postRaw(t, c, sid, v, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

func ping(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` }

// TestHTTPIDsExact, over HTTP: under a protocol version with batches (2025-03-26), a batch of
// two calls whose ids only differ past 2^53 gets two replies with those exact ids; ids the go-sdk would give back
// as other numbers (1.5, 1e3, -0, 2^63) come back as sent; two calls with one id in a batch are refused, naming it;
// a batch on a session of 2025-06-18 or later is refused even when the client leaves the version header out.
func TestHTTPIDsExact(t *testing.T) {
	r := start(t, newEchoServer(), Config{})
	c := newRawClient(t, r.URL)
	old := sessionAt(t, c, "2025-03-26")

	status, body := postRaw(t, c, old, "2025-03-26", "["+ping(bigA)+","+ping(bigB)+"]")
	if status != 200 || !strings.Contains(body, `"id":`+bigA+`,`) || !strings.Contains(body, `"id":`+bigB+`,`) {
		t.Errorf("a batch of ids %s and %s: %d %s; want two replies with those ids", bigA, bigB, status, body)
	}
	for _, id := range []string{"1.5", "1e3", "-0", "9223372036854775808", `"s-` + bigA + `"`, "7"} {
		status, body := postRaw(t, c, old, "2025-03-26", ping(id))
		if status != 200 || !strings.Contains(body, `"id":`+id+`,`) {
			t.Errorf("id %s: %d %s; want the reply with the id as sent", id, status, body)
		}
	}
	status, body = postRaw(t, c, old, "2025-03-26", "["+ping("5")+","+ping("5")+"]")
	if status != http.StatusBadRequest || strings.Count(body, `"id":5,`) != 2 || !strings.Contains(body, "two calls of this batch have the id 5") {
		t.Errorf("a batch with one id twice: %d %s; want 400 with an error for each call naming the id", status, body)
	}
	status, body = postRaw(t, c, old, "2025-03-26", "["+ping(bigA)+`,{"jsonrpc":"2.0","id":`+bigA+`,"method":"ping"}]`)
	if status != http.StatusBadRequest || !strings.Contains(body, `"id":`+bigA+`,`) {
		t.Errorf("a batch with one big id twice: %d %s; want 400 naming it exactly", status, body)
	}

	for _, v := range []string{"2025-06-18", "2025-11-25"} {
		sid := sessionAt(t, c, v)
		for _, header := range []string{v, ""} {
			status, body := postRaw(t, c, sid, header, "["+ping(bigA)+","+ping("2")+"]")
			if status != http.StatusBadRequest || !strings.Contains(body, "batches were removed in MCP 2025-06-18") || !strings.Contains(body, `"id":`+bigA+`,`) {
				t.Errorf("a batch on a %s session (header %q): %d %s; want 400, an error per call with its id", v, header, status, body)
			}
		}
		// Positive control: the same calls one at a time are answered.
		if status, body := postRaw(t, c, sid, v, ping(bigA)); status != 200 || !strings.Contains(body, `"id":`+bigA+`,`) {
			t.Errorf("one ping on a %s session: %d %s", v, status, body)
		}
	}
}

// TestHTTPCancelByBigID: with the call's id replaced by a stand-in, a second call with the same id is still refused
// while the first runs, and a notifications/cancelled naming the id as the client sent it (above 2^53) still
// cancels the call.
func TestHTTPCancelByBigID(t *testing.T) {
	p := newProbe()
	r := start(t, newProbeServer(p), Config{})
	c := newRawClient(t, r.URL)
	sid := sessionAt(t, c, "2025-06-18")
	done := make(chan string, 1)
	go func() {
		_, body := postRaw(t, c, sid, "2025-06-18", `{"jsonrpc":"2.0","id":`+bigA+`,"method":"tools/call","params":{"name":"wait","arguments":{"ms":20000}}}`)
		done <- body
	}()
	within(t, p.started, 5*time.Second, "the call to start")
	// A second call with the same id while the first runs meets the go-sdk's refusal of an id in flight (both get
	// the one stand-in), and names the id as sent.
	if status, body := postRaw(t, c, sid, "2025-06-18", ping(bigA)); status != http.StatusBadRequest || !strings.Contains(body, "duplicate") || !strings.Contains(body, `"id":`+bigA) {
		t.Errorf("a second call with an id in flight: %d %s; want 400 naming it", status, body)
	}
	postRaw(t, c, sid, "2025-06-18", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+bigA+`,"reason":"test"}}`)
	select {
	case <-p.ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the call with a big id was not cancelled by its id")
	}
}

// TestStdioIDsExact, on stdio: ids past 2^53 and other numbers the go-sdk would change come back
// exactly; a batch (refused on stdio) gets an error per call with its exact id.
func TestStdioIDsExact(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ServeStdio(ctx, newEchoServer(), inR, outW, Config{}) }()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	send := func(s string) string {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("no reply to %s", s)
		}
		return lines.Text()
	}
	send(initAt("2025-11-25"))
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	for _, id := range []string{bigA, bigB, "1.5", "-0", "1e3", "7"} {
		if got := send(ping(id)); !strings.Contains(got, `"id":`+id+`,`) {
			t.Errorf("id %s on stdio: %s", id, got)
		}
	}
	if got := send("[" + ping(bigA) + "," + ping(bigB) + "]"); !strings.Contains(got, `"id":`+bigA+`,`) || !strings.Contains(got, `"id":`+bigB+`,`) {
		t.Errorf("a batch on stdio: %s; want an error for each call with its exact id", got)
	}
	// Lines refused before any id can be read get an error with "id": null, as JSON-RPC 2.0 requires of an error
	// whose request's id is unknown.
	for _, line := range []string{"[1,", "not json", `{"jsonrpc":"2.0"}`} {
		if got := send(line); !strings.Contains(got, `"id":null`) || !strings.Contains(got, `"code":-32700`) {
			t.Errorf("refusal of %q: %s; want a parse error with id null", line, got)
		}
	}
	inW.Close()
	within(t, done, 2*time.Second, "ServeStdio to return")
}

// BenchmarkPrepareIDs is what reading a POST's ids costs on a 10 MiB write (the largest kind of request).
func BenchmarkPrepareIDs(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"sandbox_write_file","arguments":{"path":"x","content":"` +
		strings.Repeat("abcdefgh", 10<<17) + `"}}}`)
	m := newIDStandIns()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		m.prepare(body, "s", "2025-06-18")
	}
}
