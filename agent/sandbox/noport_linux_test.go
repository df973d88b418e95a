package sandbox_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/agent/sandbox"
	"github.com/goalbox/goalbox/agent/sandbox/sandboxtest"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// TestLocalServersListenOnNoPort: the servers the agent hosts are reached over in-memory links, so they open no
// port another user of the machine (or another process of this user) could reach, and there is no token to steal.
// With both servers serving calls, this process listens on no new TCP socket; the positive control is the same two
// servers run as a deployment runs them (sandboxtest), whose two listening sockets the same look sees.
func TestLocalServersListenOnNoPort(t *testing.T) {
	ctx := context.Background()
	before := listeningSockets(t)
	sb, err := sandbox.Host(ctx, sandbox.LocalOptions{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	for tool, args := range map[string]string{protocol.ToolWriteFile: `{"path":"x.txt","content":"x"}`, protocol.ToolRunCommand: `{"command":"cat x.txt"}`} {
		if res, err := sb.Call(ctx, tool, json.RawMessage(args)); err != nil || res.IsError {
			t.Fatalf("%s: %v %s", tool, err, res.Text)
		}
	}
	if opened := newSockets(before, listeningSockets(t)); len(opened) > 0 {
		t.Errorf("the in-process servers listen on %d TCP sockets (inodes %v); want none", len(opened), opened)
	}

	before = listeningSockets(t)
	sandboxtest.Start(t, t.TempDir(), "")
	if opened := newSockets(before, listeningSockets(t)); len(opened) != 2 {
		t.Errorf("control: the servers on HTTP listen on %d new TCP sockets (inodes %v); want 2, one each: the look does not see them", len(opened), opened)
	}
}

// listeningSockets are the inodes of the TCP sockets, IPv4 and IPv6, that this process has listening.
func listeningSockets(t *testing.T) map[string]bool {
	t.Helper()
	mine := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if inode, ok := strings.CutPrefix(target, "socket:["); err == nil && ok {
			mine[strings.TrimSuffix(inode, "]")] = true
		}
	}
	listening := map[string]bool{}
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address st ... inode: st 0A is LISTEN.
			if f := strings.Fields(line); len(f) > 9 && f[3] == "0A" && mine[f[9]] {
				listening[f[9]] = true
			}
		}
	}
	return listening
}

func newSockets(before, after map[string]bool) []string {
	var opened []string
	for inode := range maps.Keys(after) {
		if !before[inode] {
			opened = append(opened, inode)
		}
	}
	slices.Sort(opened)
	return opened
}
