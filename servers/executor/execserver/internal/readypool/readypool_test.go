package readypool

import (
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestPoolKeepsSandboxesReady: the pool fills to its size in the background; a take finds one ready (no spawn in
// the foreground), the refill replaces it, and close discards what waits, and a spawn that ends after close too.
func TestPoolKeepsSandboxesReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var spawned, discarded atomic.Int32
		slow := make(chan struct{}) // holds the spawns started by the refill after the take
		spawn := func() (int32, error) {
			n := spawned.Add(1)
			if n > 2 {
				<-slow
			}
			time.Sleep(5 * time.Millisecond) // a sandbox takes time to start
			return n, nil
		}
		p := New(2, spawn, func(int32) { discarded.Add(1) })
		p.WaitReady()
		if got := spawned.Load(); got != 2 {
			t.Fatalf("%d spawned to fill a pool of 2", got)
		}
		s, err := p.Take()
		if err != nil || s < 1 || s > 2 || spawned.Load() != 2 {
			t.Fatalf("take: %d %v, %d spawned (want a ready one, no new spawn)", s, err, spawned.Load())
		}
		p.Refill()
		synctest.Wait()
		if got := spawned.Load(); got != 3 {
			t.Fatalf("the refill started %d spawns in all, want 3", got)
		}
		p.Close()
		if got := discarded.Load(); got != 1 {
			t.Errorf("close discarded %d ready sandboxes, want the 1 waiting", got)
		}
		close(slow)
		time.Sleep(time.Second) // the bubble's clock: the held spawn finishes
		synctest.Wait()
		if got := discarded.Load(); got != 2 {
			t.Errorf("the spawn that ended after close was not discarded (%d discarded)", got)
		}
	})
}

// TestTakeSpawnsWhenNoneIsReady: with nothing ready (every background spawn failed), take spawns in the foreground
// and returns its error.
func TestTakeSpawnsWhenNoneIsReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("no sandbox")
		p := New(1, func() (int, error) { return 0, boom }, func(int) {})
		defer p.Close()
		synctest.Wait()
		if _, err := p.Take(); !errors.Is(err, boom) {
			t.Errorf("take: %v, want the spawn's error", err)
		}
	})
}
