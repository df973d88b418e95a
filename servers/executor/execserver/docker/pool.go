package docker

import (
	"context"
	"errors"
	"sync"
	"time"
)

// The warm pool keeps Config.WarmPool containers started, their launchers waiting, so a command skips the
// create and start that dominate a cold run. Every container still runs exactly one command and is removed after
// it: a pooled container differs from a cold one only in when it was started.

// warmPool holds started containers and the goroutine that refills it.
type warmPool struct {
	// slots holds a token for each container the pool lacks: the filler takes one before starting a container, so
	// no more than WarmPool containers wait at any time.
	slots    chan struct{}
	ready    chan *prepared
	stop     chan struct{}
	done     chan struct{}
	removals sync.WaitGroup // removals that run after Run returned
}

// startPool starts the refill goroutine. Call only with WarmPool > 0.
func (b *dockerBackend) startPool() {
	b.pool = &warmPool{
		slots: make(chan struct{}, b.cfg.WarmPool),
		ready: make(chan *prepared, b.cfg.WarmPool),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	for range b.cfg.WarmPool {
		b.pool.slots <- struct{}{}
	}
	go b.fill()
}

// fill keeps the pool full. A failure (the Engine restarting, say) is logged and retried with backoff; meanwhile
// commands start their own containers.
func (b *dockerBackend) fill() {
	defer close(b.pool.done)
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-b.pool.stop:
			return
		case <-b.pool.slots:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		// The pool waits for no place under the total caps: a command that needs one must not queue behind it.
		p, err := b.prepare(ctx, doneContext, b.poolProtection(), nil)
		cancel()
		if err != nil {
			b.pool.slots <- struct{}{}
			wait := 200 * time.Millisecond // no place under the total caps now: not a failure
			if !errors.Is(err, errSlotsFull) {
				b.log.Warn("docker backend: warm pool could not start a container", "err", err, "retry_in", backoff)
				wait, backoff = backoff, min(2*backoff, 30*time.Second)
			}
			select {
			case <-b.pool.stop:
				return
			case <-time.After(wait):
			}
			continue
		}
		backoff = 100 * time.Millisecond
		b.pool.ready <- p // never blocks: a slot was free
	}
}

// takePooled takes a live container joined to the current network holder and made with the protected set prot from
// the pool, or returns nil.
func (b *dockerBackend) takePooled(prot protection) *prepared {
	if b.pool == nil {
		return nil
	}
	for {
		select {
		case p := <-b.pool.ready:
			b.pool.slots <- struct{}{}
			// A container joined to a network holder that was since replaced would not share the loopback of the
			// commands after it; one with other protected mounts (or mounts of files since replaced: a bind holds
			// the inode it was given) would not protect what the command must not change.
			// One whose layer is larger than the caps now leave would let them be passed.
			if p.alive() && p.network == b.net.current() && p.prot.equal(prot) && b.fits(p.layer) {
				return p
			}
			b.discard(p)
			continue
		default:
		}
		return nil
	}
}

// poolProtection is the protected set the pool prepares containers with: the latest command's, which the next
// command most likely shares (.git/hooks and .git/config change rarely).
func (b *dockerBackend) poolProtection() protection {
	if p := b.lastProt.Load(); p != nil {
		return *p
	}
	return protection{}
}

// doneContext is a context that is already done: takeSlot then takes a place only when one is free now.
var doneContext = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// alive says the container's launcher has not exited while it waited in the pool.
func (p *prepared) alive() bool {
	select {
	case <-p.wait.Result:
		return false
	case <-p.wait.Error:
		return false
	default:
		return true
	}
}

// release removes a used container. With a pool, the container of a command that finished by itself (nothing runs
// in it any more) is removed after Run returns, off the command's latency; Close waits for those removals. A
// container that was killed, or may still run, is removed before Run returns.
func (b *dockerBackend) release(p *prepared, finished bool) {
	if b.pool == nil || !finished || b.pool.closing() {
		b.discard(p)
		return
	}
	b.pool.removals.Go(func() { b.discard(p) })
}

// closePool stops the refill, removes the waiting containers and waits for pending removals.
func (b *dockerBackend) closePool() {
	if b.pool == nil {
		return
	}
	close(b.pool.stop)
	<-b.pool.done
	for {
		select {
		case p := <-b.pool.ready:
			b.discard(p)
			continue
		default:
		}
		break
	}
	b.pool.removals.Wait()
}

// closing says Close has begun: removals are then done at once, so Close's wait does not race a new one.
func (wp *warmPool) closing() bool {
	select {
	case <-wp.stop:
		return true
	default:
		return false
	}
}
