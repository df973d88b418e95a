//go:build !linux

package egress

import "time"

// quiet is how long pl's connection has been admitted: without Linux's TCP_INFO the proxy cannot see the bytes a
// tunnel moves, so the oldest connection counts as the quietest.
func (pl *place) quiet() time.Duration { return time.Since(pl.since) }
