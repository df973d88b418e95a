//go:build linux

package local

import (
	"context"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
)

// TestServerForksNothing: in namespace mode the server makes no copy of itself per command (the holder does,
// forker_linux.go). A keeper forked from the server shares its heap copy-on-write, and the server then pays a page
// fault for every page it writes: some 500 per command through MCP when it did. The positive control forks, beside
// each command, a keeper from the test process itself, as the server did, and must see the count rise.
func TestServerForksNothing(t *testing.T) {
	be, _ := newLocalTestBackend(t, nil)
	lb := be.(*localBackend)
	if lb.nsPool == nil {
		ciskip.Skip(t, "fallback mode: commands start through a re-executed child init, not a fork of the server")
	}
	req := backend.Request{Command: "true", Dir: ".", Timeout: time.Minute, Stdout: io.Discard, Stderr: io.Discard}
	faultsPerCommand := func(beside func()) int64 {
		const n = 100
		var before, after syscall.Rusage
		for i := range n + 10 {
			lb.nsPool.WaitReady()
			if i == 10 { // warmed up
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			}
			beside()
			if res, err := be.Run(context.Background(), req); err != nil || res.ExitCode != 0 {
				t.Fatalf("%+v %v", res, err)
			}
		}
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		return (after.Minflt - before.Minflt) / n
	}

	// About 7 per command here; about 130 with a copy of the test process forked per command.
	const faultsLimit = 40
	perCommand := faultsPerCommand(func() {})
	t.Logf("minor page faults in the server per command: %d", perCommand)
	if perCommand > faultsLimit {
		t.Errorf("the server took %d page faults per command: something forks the server's heap again", perCommand)
	}

	// Positive control: a keeper forked from this process before each command (stopped at its go-ahead, as the
	// server's own were) makes the same count rise above the threshold.
	thread := newForkThread()
	defer thread.close()
	k, err := newKeeper(&commandPolicy{Dir: "/", Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	k.state.cloneFlags, k.state.ppid = 0, uintptr(os.Getpid())
	var copies []int
	var syncs []*os.File
	defer func() {
		for _, f := range syncs {
			f.Close() // EOF at the go-ahead: the copy exits
		}
		for _, pid := range copies {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
	}()
	withCopies := faultsPerCommand(func() {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		syncs = append(syncs, w)
		for i := range k.state.fds {
			k.state.fds[i] = -1
		}
		k.state.fds[fdSync] = int(r.Fd())
		var pid int
		var errno syscall.Errno
		_ = thread.do(func() {
			syscall.ForkLock.Lock()
			pid, errno = nsFork(k.programs[0], &k.state)
			syscall.ForkLock.Unlock()
		})
		if errno != 0 {
			t.Fatalf("fork a copy: %v", errno)
		}
		copies = append(copies, pid)
	})
	t.Logf("positive control: with a copy of this process forked before each command: %d per command", withCopies)
	if withCopies <= faultsLimit {
		t.Errorf("positive control: forking a copy of the process per command took only %d page faults per command", withCopies)
	}
}
