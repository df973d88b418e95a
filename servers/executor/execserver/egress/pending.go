package egress

// Pending connections. A connection is attributed to a command by the credentials of its first request, so until
// that request arrives the proxy cannot know whose it is. Counted against the executor's -net-max-conns (as they
// were), a single process opening sockets and sending nothing held every place, and every other command's requests
// were refused. So a pending connection counts against no limit: it has HeadTimeout to send its first head, whole,
// and at most MaxConns of them wait at once, the oldest closed to make room for a new one. A flood of silent
// connections therefore pushes out its own older ones; a client's connection, whose head follows its connect at
// once, is read long before MaxConns newer connections arrive. From its first head a connection is its command's,
// within that command's -net-max-conns-per-command and the executor's -net-max-conns, shared evenly (admit.go).

import "net"

// pend adds c to the pending connections, closing the oldest of them when MaxConns already wait.
func (p *Proxy) pend(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) >= p.cfg.MaxConns {
		var oldest net.Conn
		var at uint64
		for pc, n := range p.pending {
			if oldest == nil || n < at {
				oldest, at = pc, n
			}
		}
		delete(p.pending, oldest)
		oldest.Close()
	}
	p.arrivals++
	p.pending[c] = p.arrivals
}

// unpend takes c off the pending connections: false when it was closed to make room meanwhile.
func (p *Proxy) unpend(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.pending[c]
	delete(p.pending, c)
	return ok
}
