package egress

import (
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"context"
)

// countingListener counts the connections the proxy accepted.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// echoProxy serves a proxy with the default limits whose ok.test:7 is an echo server on loopback.
func echoProxy(t *testing.T, cfg Config) (*Proxy, *countingListener) {
	t.Helper()
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	cfg.Allow, _ = ParseAllowList("ok.test:7,198.51.100.0/24")
	cfg.Resolver = hostsFile(t, "198.51.100.7 ok.test")
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.dial = func(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", up.Addr().String())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	go p.Serve(cl)
	t.Cleanup(func() { p.Close() })
	return p, cl
}

// tunnelTo opens a CONNECT tunnel to ok.test:7 as session s (nil: without credentials) and returns the connection
// and the status line; a tunnel that answers 200 echoes a ping.
func tunnelTo(t *testing.T, addr string, s *Session) (net.Conn, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	auth := ""
	if s != nil {
		auth = "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(s.id+":"+s.token)) + "\r\n"
	}
	fmt.Fprintf(c, "CONNECT ok.test:7 HTTP/1.1\r\nHost: ok.test:7\r\n%s\r\n", auth)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, _ := c.Read(buf)
	status, _, _ := strings.Cut(string(buf[:n]), "\r\n")
	if strings.Contains(status, " 200 ") {
		io.WriteString(c, "ping")
		if n, err := io.ReadFull(c, buf[:4]); err != nil || string(buf[:n]) != "ping" {
			t.Errorf("the tunnel does not echo: %q %v", buf[:n], err)
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, status
}

// openCount says how many of conns the proxy still holds open: a read that times out, rather than ending, is an
// open connection.
func openCount(conns []net.Conn) int {
	var open atomic.Int64
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			var b [1]byte
			if _, err := c.Read(b[:]); err != nil && strings.Contains(err.Error(), "timeout") {
				open.Add(1)
			}
		})
	}
	wg.Wait()
	return int(open.Load())
}

// TestIdleSocketsCannotHoldTheProxy: the attack. One process opens 300 sockets to the proxy and sends
// nothing; another command's request is still served. Then the same process opens 300 tunnels with its own
// credentials: it gets its -net-max-conns-per-command (64), and the other command is still served. Positive
// control: the 300 silent sockets really held the old limit's 256 places at once (the proxy keeps that many open
// when the other command asks), which made every other command's request a 503 before.
func TestIdleSocketsCannotHoldTheProxy(t *testing.T) {
	p, ln := echoProxy(t, Config{})
	addr := ln.Addr().String()
	var silent []net.Conn
	for range 300 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
		defer c.Close()
	}
	for deadline := time.Now().Add(20 * time.Second); ln.n.Load() < 300; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy accepted %d of the 300 connections in 20 s", ln.n.Load())
		}
	}
	victim := p.Begin()
	c, status := tunnelTo(t, addr, victim)
	c.Close()
	if !strings.Contains(status, " 200 ") {
		t.Errorf("another command's CONNECT while one process holds 300 silent sockets: %q", status)
	}
	if n := openCount(silent); n < DefaultMaxConns-1 {
		t.Errorf("control: the proxy held only %d of the 300 silent sockets open, fewer than the old limit's %d", n, DefaultMaxConns)
	}
	for _, c := range silent {
		c.Close()
	}

	attacker := p.Begin()
	var held []net.Conn
	var ok, refused int
	for range 300 {
		c, status := tunnelTo(t, addr, attacker)
		switch {
		case strings.Contains(status, " 200 "):
			ok++
			held = append(held, c)
		case strings.Contains(status, " 503 ") && strings.Contains(status, "limit"):
			refused++
			c.Close()
		default:
			t.Fatalf("the attacker's tunnel: %q", status)
		}
	}
	if ok != DefaultMaxConnsPerCommand || refused != 300-DefaultMaxConnsPerCommand {
		t.Errorf("one command's 300 tunnels: %d opened, %d refused; want %d and the rest", ok, refused, DefaultMaxConnsPerCommand)
	}
	c, status = tunnelTo(t, addr, victim)
	c.Close()
	if !strings.Contains(status, " 200 ") {
		t.Errorf("another command's CONNECT while one holds its %d tunnels: %q", ok, status)
	}
	if n := openCount(held); n != DefaultMaxConnsPerCommand {
		t.Errorf("control: the attacker's tunnels open %d, want %d", n, DefaultMaxConnsPerCommand)
	}
	for _, c := range held {
		c.Close()
	}
	victim.End()
	attacker.End()
}

// TestSlowHeadIsClosed: a connection that trickles its first request's head a byte at a time, each byte well
// within the idle timeout, is closed at the head timeout. Positive control: a tunnel opened at once lives on past
// the head timeout.
func TestSlowHeadIsClosed(t *testing.T) {
	p, ln := echoProxy(t, Config{HeadTimeout: time.Second, IdleTimeout: 10 * time.Second})
	s := p.Begin()
	defer s.End()
	fast, status := tunnelTo(t, ln.Addr().String(), s)
	defer fast.Close()
	if !strings.Contains(status, " 200 ") {
		t.Fatalf("CONNECT: %q", status)
	}
	slow, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	head := "CONNECT ok.test:7 HTTP/1.1\r\nHost: ok.test:7\r\nX-Padding: " + strings.Repeat("x", 100)
	closed := false
	for i := 0; i < len(head) && !closed; i++ {
		if _, err := slow.Write([]byte{head[i]}); err != nil {
			closed = true
		}
		time.Sleep(100 * time.Millisecond) // 14 s for the whole head against a 10 s idle timeout and a 1 s head timeout
		if i%10 == 9 {
			_ = slow.SetReadDeadline(time.Now().Add(time.Millisecond))
			var b [1]byte
			if _, err := slow.Read(b[:]); err != nil && !strings.Contains(err.Error(), "timeout") {
				closed = true
			}
		}
	}
	if !closed {
		t.Errorf("a head trickled over 14 s was not cut at the 1 s head timeout")
	}
	io.WriteString(fast, "pong")
	buf := make([]byte, 4)
	_ = fast.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(fast, buf); err != nil || string(buf) != "pong" {
		t.Errorf("control: the tunnel opened at once did not outlive the head timeout: %q %v", buf, err)
	}
}

// TestBusySessionsCannotHoldTheProxy: four commands (or background processes, each a session of the proxy's) open
// 64 idle tunnels each, the most each may, and so hold all 256 of the executor's places; another command's CONNECT
// is still served, by closing the quietest of their tunnels (listed in its command's network_denied). A busy
// session cannot take the place back (it would hold more than the newcomer), and none is closed to serve it.
// Positive control: with the fair share off, the same 256 tunnels make the other command's CONNECT a 503.
func TestBusySessionsCannotHoldTheProxy(t *testing.T) {
	p, ln := echoProxy(t, Config{})
	addr := ln.Addr().String()
	hold := func() (held []net.Conn, sessions []*Session) {
		for range DefaultMaxConns / DefaultMaxConnsPerCommand {
			s := p.Begin()
			sessions = append(sessions, s)
			for range DefaultMaxConnsPerCommand {
				c, status := tunnelTo(t, addr, s)
				if !strings.Contains(status, " 200 ") {
					t.Fatalf("tunnel %d of the busy commands: %q", len(held)+1, status)
				}
				held = append(held, c)
			}
		}
		return held, sessions
	}
	end := func(held []net.Conn, sessions []*Session) {
		for _, c := range held {
			c.Close()
		}
		for _, s := range sessions {
			s.End()
		}
	}

	p.fairShareOff.Store(true)
	held, busy := hold()
	victim := p.Begin()
	c, status := tunnelTo(t, addr, victim)
	c.Close()
	if !strings.Contains(status, " 503 ") || !strings.Contains(status, "limit") {
		t.Errorf("control: with the fair share off, another command's CONNECT while four hold 64 tunnels each: %q", status)
	}
	end(held, busy)
	victim.End()
	p.fairShareOff.Store(false)

	held, busy = hold()
	quiet := len(held) * 3 / 5        // one tunnel of the third command stays quiet; every other moves a byte again
	time.Sleep(50 * time.Millisecond) // the kernel counts in jiffies (4 or 10 ms)
	for i, c := range held {
		if i != quiet {
			io.WriteString(c, "p")
			io.ReadFull(c, make([]byte, 1))
		}
	}
	victim = p.Begin()
	c, status = tunnelTo(t, addr, victim)
	defer c.Close()
	if !strings.Contains(status, " 200 ") {
		t.Errorf("another command's CONNECT while four hold 64 tunnels each: %q", status)
	}
	if n := openCount(held); n != DefaultMaxConns-1 {
		t.Errorf("%d of the busy commands' %d tunnels open after the other command's came, want one closed", n, DefaultMaxConns)
	}
	if openCount(held[quiet:quiet+1]) != 0 {
		t.Errorf("the tunnel closed to make room is not the quietest")
	}
	var lost []string
	for _, s := range busy {
		s.mu.Lock()
		lost = append(lost, s.denied...)
		s.mu.Unlock()
	}
	if strings.Join(lost, " ") != "ok.test:7" {
		t.Errorf("the busy commands' network_denied: %q, want the one place lost", lost)
	}
	for _, s := range busy {
		again, status := tunnelTo(t, addr, s)
		again.Close()
		if !strings.Contains(status, " 503 ") {
			t.Errorf("a busy command opening one more tunnel: %q, want 503 (it would hold more than the other)", status)
		}
	}
	if n := openCount([]net.Conn{c}); n != 1 {
		t.Errorf("the other command's tunnel was closed to make room for the busy ones")
	}
	end(held, busy)
	victim.End()
}
