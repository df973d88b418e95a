package outputs

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// read is one page of uri read for reader, or the JSON-RPC error's message.
func read(o *Store, reader Owner, uri string) (string, error) {
	res, err := o.readResource(reader, &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != -32602 || string(rpc.Data) != `{"uri":"`+uri+`"}` {
			return "", errors.New("not an error of MCP's resource not found (-32602, the uri in data): " + err.Error())
		}
		return "", err
	}
	return res.Contents[0].Text, nil
}

// TestOwnersKeepApart: the store keeps a session's outputs and the stateless store's apart by the owner its caller
// gives. A stateless output's URI names a 26-character handle that any reader holding it may read (from either
// era); a session's output is read by that session only, not by another session and not by a stateless reader.
// Controls: each output is read by its own owner; a stateless output unread for the idle timeout is dropped, and
// one that is read keeps. The idle timeout runs on synctest's clock: the sleeps take no time and the reaper runs at
// the instants the test names, however loaded the machine.
func TestOwnersKeepApart(t *testing.T) { synctest.Test(t, testOwnersKeepApart) }

func testOwnersKeepApart(t *testing.T) {
	const idle = 400 * time.Millisecond
	o := New(DefaultBudget, DefaultTotal, idle, nil)
	defer o.Close()
	a, b := memorySession(t), memorySession(t)
	keep := func(ow Owner, text string) string {
		k := o.Keep(ow, "stdout", 0)
		k.Write([]byte(text))
		k.Close()
		return k.URI()
	}
	sessions := keep(SessionOwner(a), "a's")
	stateless := keep(StatelessOwner, "nobody's")
	if host := strings.TrimPrefix(stateless, "goalbox-output://"); len(strings.Split(host, "/")[0]) != handleLen {
		t.Fatalf("a stateless output's URI %q does not name a %d-character handle", stateless, handleLen)
	}
	if host := strings.TrimPrefix(sessions, "goalbox-output://"); len(strings.Split(host, "/")[0]) != 16 {
		t.Fatalf("a session's output's URI %q does not name a 16-character ID", sessions)
	}
	for _, c := range []struct {
		what   string
		reader Owner
		uri    string
		want   string // "" for not found
	}{
		{"a reads its own", SessionOwner(a), sessions, "a's"},
		{"b reads a's", SessionOwner(b), sessions, ""},
		{"a stateless reader reads a's", StatelessOwner, sessions, ""},
		{"a stateless reader reads the handle", StatelessOwner, stateless, "nobody's"},
		{"a session reads the handle", SessionOwner(b), stateless, "nobody's"},
		{"no session reads the handle", SessionOwner(nil), stateless, "nobody's"},
	} {
		got, err := read(o, c.reader, c.uri)
		if c.want == "" && (err == nil || strings.HasPrefix(err.Error(), "not a not-found")) || c.want != "" && got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.what, got, err, c.want)
		}
	}

	kept := keep(StatelessOwner, "read often")
	for end := time.Now().Add(3 * idle); time.Now().Before(end); time.Sleep(idle / 4) {
		if _, err := read(o, StatelessOwner, kept); err != nil {
			t.Fatalf("a stateless output read every %v was dropped: %v", idle/4, err)
		}
	}
	if _, err := read(o, StatelessOwner, stateless); err == nil || !strings.Contains(err.Error(), "no call read it") {
		t.Errorf("a stateless output unread for %v: %v, want it dropped as unread", 3*idle, err)
	}
	if got, err := read(o, SessionOwner(a), sessions); got != "a's" {
		t.Errorf("a session's output is not the stateless store's to drop: %q, %v", got, err)
	}
}
