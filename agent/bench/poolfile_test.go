package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParsePool(t *testing.T) {
	file := `# two sandboxes of a compose pool
http://127.0.0.1:7101/mcp http://127.0.0.1:7102/mcp

	http://sandbox-1.sandboxes:7101/mcp	http://sandbox-1.sandboxes:7102/mcp  fs-secret  -
https://example.test/s2/fs https://example.test/s2/exec - -
`
	sbs, err := ParsePool(strings.NewReader(file), "pool.txt", "env-fs", "env-exec")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sb := range sbs {
		names = append(names, sb.Name)
		if sb.Grade == nil || sb.Agent == nil {
			t.Errorf("%s: no factories", sb.Name)
		}
	}
	if got := strings.Join(names, " "); got != "127.0.0.1:7101 sandbox-1.sandboxes:7101 example.test/s2/fs" {
		t.Errorf("names: %s", got)
	}
}

func TestParsePoolErrors(t *testing.T) {
	cases := []struct{ file, want string }{
		{"", "pool.txt: no sandbox in the pool file"},
		{"# only a comment\n\n", "no sandbox"},
		{"http://127.0.0.1:7101/mcp\n", "pool.txt:1: 1 fields; each line is FS_URL EXEC_URL"},
		{"\nhttp://a:1/mcp http://a:2/mcp tok\n", "pool.txt:2: 3 fields"},
		{"127.0.0.1:7101 http://a:2/mcp\n", `pool.txt:1: FS_URL "127.0.0.1:7101": want an http:// or https:// URL`},
		{"http://a:1/mcp ftp://a:2/mcp\n", `EXEC_URL "ftp://a:2/mcp": want an http://`},
		{"http://u:p@a:1/mcp http://a:2/mcp\n", "no user or password in the URL"},
		{"http://a:1/mcp http://a:1/mcp\n", "the same URL"},
		{"http://a:1/mcp http://a:2/mcp\n# again\nhttp://a:1/mcp http://a:3/mcp\n", "pool.txt:3: sandbox a:1 is already on line 1"},
	}
	for _, c := range cases {
		_, err := ParsePool(strings.NewReader(c.file), "pool.txt", "", "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.file, err, c.want)
		}
	}
}

// The pool hands out sandboxes first in, first out, waits while all are busy, and fails only once every sandbox
// has been drained; a failed sandbox's work starts again on another, but an exercise that takes down two
// sandboxes is given up rather than let empty the pool.
func TestPoolDrainsAndRetries(t *testing.T) {
	ctx := context.Background()
	p := NewPool(PoolSandbox{Name: "a"}, PoolSandbox{Name: "b"}, PoolSandbox{Name: "c"}, PoolSandbox{Name: "d"})
	var drained []string
	p.OnDrain = func(name string, err error, left int) { drained = append(drained, name) }
	var ran []string
	failOn := func(bad ...string) func(sb *PoolSandbox) (string, error) {
		return func(sb *PoolSandbox) (string, error) {
			ran = append(ran, sb.Name)
			for _, b := range bad {
				if sb.Name == b {
					return "", &SandboxFailure{Sandbox: sb.Name, Err: errors.New("down")}
				}
			}
			return "done on " + sb.Name, nil
		}
	}
	got, err := onPool(ctx, p, failOn("a"))
	if err != nil || got != "done on b" || strings.Join(ran, ",") != "a,b" || strings.Join(drained, ",") != "a" {
		t.Errorf("got %q, %v; ran on %v, drained %v", got, err, ran, drained)
	}
	// c and d fail under the same work: it is given up, and b is left.
	ran = nil
	if _, err := onPool(ctx, p, failOn("b", "c", "d")); !errors.Is(err, ErrGaveUp) || !strings.Contains(err.Error(), "sandbox d: down") || strings.Join(ran, ",") != "c,d" {
		t.Errorf("err %v, ran on %v", err, ran)
	}
	// An error that is not the sandbox's is the work's own: the sandbox goes back.
	if _, err := onPool(ctx, p, func(*PoolSandbox) (int, error) { return 0, errors.New("solution broke") }); err == nil || err.Error() != "solution broke" {
		t.Errorf("err %v", err)
	}
	// A taker waits for a busy sandbox to come back.
	sb, err := p.take(ctx)
	if err != nil || sb.Name != "b" {
		t.Fatalf("take: %v %v", sb, err)
	}
	back := make(chan *PoolSandbox)
	go func() {
		sb, _ := p.take(ctx)
		back <- sb
	}()
	time.Sleep(20 * time.Millisecond)
	p.put(sb)
	if got := <-back; got != sb {
		t.Errorf("the waiting taker got %v", got)
	}
	// A taker waiting when the last sandbox is drained is told the pool is empty.
	go func() {
		_, err := p.take(ctx)
		if !errors.Is(err, ErrPoolEmpty) || !strings.Contains(err.Error(), "b: gone") {
			t.Errorf("an empty pool: %v", err)
		}
		back <- nil
	}()
	time.Sleep(20 * time.Millisecond)
	p.drain(sb, errors.New("gone"))
	<-back
}
