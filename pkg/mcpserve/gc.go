package mcpserve

import (
	"os"
	"runtime/debug"
)

// GCPercent is the garbage collector's target the filesystem server and the agent run with (GOGC 400). Their live
// heaps are small and every call churns through JSON — tens to hundreds of KB per call, much of it the go-sdk's
// 32 KiB decoder buffers — so at the default of 100 the collector runs every few calls, and it and the scavenger
// returning the pages to the kernel (madvise) took a third of the agent's CPU per call. At 400 the go-sdk client's
// CPU per 16 KiB tool call drops by a third (docs/BENCHMARKS.md, "The agent's side"), for a heap a few times the
// live one; the filesystem server's heap has the same shape.
const GCPercent = 400

// TuneGC sets GCPercent, unless GOGC is set: the user's choice wins.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
}
