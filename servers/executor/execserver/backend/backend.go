// Package backend is the contract every backend of the executor meets, below everything else of the executor:
// Request, Result, Backend, ProtectEnforcer and ParseRunAs. The backends (execserver/local, execserver/docker) import
// it and nothing of the tools above, so the tools, the processes and the backends each build without the others.
package backend

import (
	"context"
	"io"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
)

// Request is one command for a backend to run.
type Request struct {
	// Command is run by sh -c.
	Command string
	// Dir is the working folder, workspace-relative and already checked by pathguard ("." for the workspace).
	Dir string
	// Stdin is given on standard input; the command sees EOF after it.
	Stdin string
	// StdinStream, when not nil, is standard input instead of Stdin: copied to the command as it comes, until EOF
	// (a process started with its stdin open).
	StdinStream io.Reader
	// Terminate, when not nil and closed, asks the command to end: SIGTERM to every one of its processes (the
	// whole tree, or the container's). Cancelling ctx still kills at once.
	Terminate <-chan struct{}
	// Timeout kills the command when it runs longer. Always set.
	Timeout time.Duration
	// Stdout and Stderr receive the output as it comes. The server passes capped writers that keep head and tail.
	Stdout, Stderr io.Writer
	// Protected are the protected project paths present in the workspace when the command starts (workspace-
	// relative, "/"-separated, none inside another; see pathguard.Protection): the command must not change,
	// replace, rename or delete them. A backend that can makes each read-only in the command's view (a read-only
	// bind mount); the server sweeps what any backend could not stop (execserver's protect.go).
	Protected []string
	// Apply, when not nil, applies a command's changes to the workspace (package wsguard): a backend that gives each
	// command a copy-on-write layer of the workspace (Layered) calls it with the layer's upper folder when the
	// command ends, and every few seconds while it runs, and returns what it refused in Result.WorkspaceRefused.
	Apply func(upper string) []protocol.WorkspaceRefusal
	// Queued, when not nil, is told by a backend that holds commands back until there is room under its total
	// caps (HoldsBack): once, soon after Run is called, whether the command waits for room (true) or has it
	// (false); and false once a command that waited gets it. Until then the command has not started.
	Queued func(waiting bool)
}

// HoldsBack is what a backend implements when it may hold a command back, before it starts, until there is room
// under its total caps (the docker backend's -total-memory-limit-mb): it then calls Request.Queued.
type HoldsBack interface {
	HoldsBack() bool
}

// Result is how a command ended.
type Result struct {
	// ExitCode is the command's exit status, or -1 when it was killed (timeout, cancellation, signal).
	ExitCode int
	// TimedOut says the command was killed because it ran past Request.Timeout.
	TimedOut bool
	// NetworkDenied and Network are what the egress proxy refused the command (host:port) and what it reached,
	// with -net-allow; nil without.
	NetworkDenied []string
	Network       []protocol.NetworkHost
	// WorkspaceRefused are the command's changes Request.Apply did not apply (a Layered backend only).
	WorkspaceRefused []protocol.WorkspaceRefusal
}

// Layered is what a backend implements when each of its commands works on a copy-on-write layer of the workspace
// and never writes the workspace itself: its changes reach the workspace only through Request.Apply, so the
// protected files need no read-only mounts and no sweep. Layered may answer false (a mode without the layer).
type Layered interface {
	Layered() bool
}

// Backend runs commands confined to the workspace. When Run returns, no process the command started is left
// running: a backend must kill the whole tree (or container), including processes that double-forked or called
// setsid. Cancelling ctx kills at once and Run returns with ExitCode -1. An error means the backend could not run
// the command at all (e.g. Docker is down), not that the command failed.
type Backend interface {
	// Name is "local" or "docker".
	Name() string
	// Run runs one command.
	Run(ctx context.Context, req Request) (Result, error)
	// Confinement describes what confinement is active, for the health endpoint and the start-up log.
	Confinement() protocol.Confinement
	// Close releases the backend's resources.
	Close() error
}

// ProtectEnforcer is what a backend implements when it makes Request.Protected read-only for its commands. A
// backend that does not (or answers false) has its commands' changes to protected files undone after they end.
type ProtectEnforcer interface {
	EnforcesProtected() bool
}
