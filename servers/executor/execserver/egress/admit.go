package egress

// Admission. A connection becomes its session's with its first request head, and takes a place of the session's
// -net-max-conns-per-command and one of the executor's -net-max-conns. The per-command cap alone leaves the
// executor's places to whoever takes them first: four commands or background processes holding 64 tunnels each
// fill the 256, and every other session is refused until they end. So when the executor's places are all held, a
// session that holds fewer than the busiest one is not refused: the busiest session's connection that has moved
// nothing for the longest is closed to make room (its client sees the connection end, its command's result lists
// the place it lost, rule "fair-share", and the log says so). A session is refused only when no other holds more
// than it would once admitted, so the places end up shared evenly between the sessions that want them
// (max-min fair), whatever any of them opens.

import (
	"fmt"
	"iter"
	"net"
	"net/http"
	"strconv"
	"time"
)

// place is an admitted client connection: a place of its session's and of the executor's.
type place struct {
	c        *idleConn
	s        *Session
	hostport string    // the first request's target, for the refusal that closes it
	since    time.Time // admitted
	gone     bool      // closed to make room; its places were handed on then (p.mu)
}

// admit gives c, whose first request names s and targets host:port, a place of s's and one of the executor's,
// closing the busiest other session's quietest connection when the executor's are all held; a refusal when s
// holds its -net-max-conns-per-command, or no other session holds more than s would.
func (p *Proxy) admit(s *Session, c *idleConn, host string, port int) (*place, *refusal) {
	refused := func(reason string) *refusal {
		return &refusal{status: http.StatusServiceUnavailable, host: host, port: port, rule: "limit", detailed: true, denied: true, reason: reason}
	}
	p.mu.Lock()
	if len(s.places) >= p.cfg.MaxConnsPerCommand {
		p.mu.Unlock()
		return nil, refused(fmt.Sprintf("this command already holds %d proxy connections, the executor's -net-max-conns-per-command", p.cfg.MaxConnsPerCommand))
	}
	var victim *place
	if p.conns >= p.cfg.MaxConns {
		if !p.fairShareOff.Load() {
			victim = p.quietestOfBusiest(s)
		}
		if victim == nil {
			p.mu.Unlock()
			return nil, refused(fmt.Sprintf("the executor's commands already hold %d proxy connections, its -net-max-conns, and none holds more than "+
				"this command would (%d); try again when some end", p.cfg.MaxConns, len(s.places)+1))
		}
		victim.gone = true
		delete(victim.s.places, victim)
		p.conns--
	}
	pl := &place{c: c, s: s, hostport: net.JoinHostPort(host, strconv.Itoa(port)), since: time.Now()}
	s.places[pl] = struct{}{}
	p.conns++
	p.mu.Unlock()
	if victim != nil {
		victim.c.Close()
		victim.s.deny(victim.hostport)
		p.denied.Add(1)
		p.cfg.Logger.Warn("egress refused", "command", victim.s.id, "host", victim.hostport, "rule", "fair-share", "reason",
			fmt.Sprintf("closed, its quietest connection, to make room for command %s: the executor's -net-max-conns (%d) were all held, "+
				"and this command held the most (%d)", s.id, p.cfg.MaxConns, len(victim.s.places)+1))
	}
	return pl, nil
}

// quietestOfBusiest is the connection that moved nothing for the longest among those of the sessions other than s
// holding the most places, when that is more than s would hold once admitted; nil when there is none (p.mu held).
func (p *Proxy) quietestOfBusiest(s *Session) *place {
	most := 0
	for o := range p.placeHolders(s) {
		most = max(most, len(o.places))
	}
	if most <= len(s.places)+1 {
		return nil
	}
	var quietest *place
	var longest time.Duration
	for o := range p.placeHolders(s) {
		if len(o.places) < most {
			continue
		}
		for pl := range o.places {
			if q := pl.quiet(); quietest == nil || q > longest {
				quietest, longest = pl, q
			}
		}
	}
	return quietest
}

// placeHolders are the sessions other than s, the unattributed one included (p.mu held).
func (p *Proxy) placeHolders(s *Session) iter.Seq[*Session] {
	return func(yield func(*Session) bool) {
		for _, o := range p.sessions {
			if o != s && !yield(o) {
				return
			}
		}
		if p.anon != s {
			yield(p.anon)
		}
	}
}

// release gives pl's places back, unless they were handed on when it was closed to make room.
func (p *Proxy) release(pl *place) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !pl.gone {
		delete(pl.s.places, pl)
		p.conns--
	}
}
