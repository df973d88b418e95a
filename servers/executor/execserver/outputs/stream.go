package outputs

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stream is an io.Writer that keeps a whole stream for its Owner once it passes a threshold: until then
// the bytes wait in memory (at most threshold of them), and most streams end there, costing no file. Past it they
// go to the session's store, oldest outputs evicted first when its budget is full. Write never fails and never
// blocks on anything but the store's file, so a command is never slowed or killed for talking.
//
// Use, for any stream a tool shows only part of (sandbox_run_command's capped output, a process's ring buffer):
//
//	k := store.Keep(outputs.SessionOwner(req.Session), "stdout", threshold) // threshold: bytes the tool result shows whole
//	... write every byte of the stream to k as well ...
//	k.Close() // the stream ended (a read then says complete)
//	if uri := k.URI(); uri != "" { ... put uri and k.Link() in the result ... }
//
// A process whose stream is still running can give URI and Link before Close: reads see what was written so far.
type Stream struct {
	store     *Store
	owner     Owner
	name      string
	threshold int
	// partial says, in the resource_link's description, what the tool result shows of the stream; "" for a
	// command's result (its head and tail).
	partial string

	mu      sync.Mutex
	pending []byte // the first bytes, until threshold is passed
	total   int64
	off     bool // nothing more is kept: no store, session gone, or could not start
	session *sessionOutputs
	out     *keptOutput
}

// streamName is what Keep accepts as a stream's name: it is the last part of the resource's URI.
var streamName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// Keep starts keeping a stream named name ("stdout", "stderr") for ow (a session, or the stateless store), once it
// is longer than threshold bytes (0: from the first byte). With no session or a store that keeps nothing, the
// writer only counts.
func (o *Store) Keep(ow Owner, name string, threshold int) *Stream {
	if !streamName.MatchString(name) {
		panic(fmt.Sprintf("outputs.Keep: stream name %q: want lower-case letters, digits, - or _", name))
	}
	return &Stream{store: o, owner: ow, name: name, threshold: max(threshold, 0), off: o == nil || o.budget <= 0 || !ow.keeps()}
}

// KeepPartial starts keeping, from its first byte, a stream of which the tool shows only a part that partial
// describes in the resource_link ("of which process p1's buffer holds only the last 1048576 bytes at most").
func (o *Store) KeepPartial(ow Owner, name, partial string) *Stream {
	k := o.Keep(ow, name, 0)
	k.partial = partial
	return k
}

// Keeps says whether the store keeps anything (a budget of 0 keeps nothing).
func (o *Store) Keeps() bool { return o.budget > 0 }

// Write keeps p (or holds it until the threshold is passed). It always reports len(p), nil.
func (k *Stream) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.total += int64(len(p))
	if k.off {
		return len(p), nil
	}
	if k.out == nil {
		if k.total <= int64(k.threshold) {
			k.hold(p)
			return len(p), nil
		}
		if !k.start() {
			return len(p), nil
		}
		k.session.write(k.out, k.pending)
		k.pending = nil
	}
	k.session.write(k.out, p)
	return len(p), nil
}

// hold appends p to the pending bytes, growing the buffer no larger than the threshold.
func (k *Stream) hold(p []byte) {
	if need := len(k.pending) + len(p); need > cap(k.pending) {
		grown := make([]byte, len(k.pending), min(max(2*cap(k.pending), need, 4096), k.threshold))
		copy(grown, k.pending)
		k.pending = grown
	}
	k.pending = append(k.pending, p...)
}

// start makes the output in the session's store.
func (k *Stream) start() bool {
	k.session = k.store.owned(k.owner, true)
	if k.session != nil {
		id := newOutputID()
		if k.owner.Stateless {
			id = NewHandle() // the URI is the only way to it: 130 bits
		}
		k.out = k.session.add(id+"/"+k.name, k.owner)
	}
	if k.out == nil {
		k.off, k.pending = true, nil
		return false
	}
	return true
}

// Close marks the stream ended; a kept output stays readable until evicted or its session ends.
func (k *Stream) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pending = nil
	if k.out != nil {
		k.session.finish(k.out)
	}
	return nil
}

// Total is how many bytes were written.
func (k *Stream) Total() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.total
}

// URI is the resource that serves the kept stream, or "" when none does: the stream never passed the threshold,
// or it was not kept (evicted, alone larger than the budget, no session).
func (k *Stream) URI() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.out == nil || !k.session.kept(k.out) {
		return ""
	}
	return outputURI(k.out.id)
}

// Link is the resource_link content item for the kept stream, nil when URI is "".
func (k *Stream) Link() *mcp.ResourceLink {
	uri := k.URI()
	if uri == "" {
		return nil
	}
	size := k.Total()
	partial := k.partial
	partial = cmp.Or(partial, "which the result shows only the head and tail of")
	return &mcp.ResourceLink{
		URI:   uri,
		Name:  k.name,
		Title: fmt.Sprintf("full %s (%d bytes)", k.name, size),
		Description: fmt.Sprintf("The whole %s, %d bytes, %s. resources/read returns it in pages "+
			"of up to %d bytes (default %d); add ?offset=N&length=M to read from byte N.", k.name, size, partial, maxOutputPage, defaultOutputPage),
		MIMEType: "text/plain",
		Size:     &size,
	}
}

// handleLen is the length of a handle: rand.Text's 26 base32 characters, 130 bits.
const handleLen = 26

// NewHandle is an unguessable name for something a stateless call made: an output, whose URI is the only way to it,
// or a process (package processes).
func NewHandle() string { return strings.ToLower(rand.Text()) }

// newOutputID is 80 random bits in lower-case base32: an output's URI names no session and cannot be guessed.
func newOutputID() string { return strings.ToLower(rand.Text()[:16]) }

// outputURI is the resource URI of the output id.
func outputURI(id string) string { return protocol.OutputResourceScheme + "://" + id }
