//go:build linux

package sandboxtest

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// hostUnixSockets listens on a UNIX socket, open to every user (0777), in each of the host folders where one is
// found in the wild — a daemon's /var/lib or /srv or /opt folder, and the user's home (Docker Desktop's
// ~/.docker/desktop/docker.sock, ~/.1password/agent.sock, a gpg agent) — and returns their paths with a counter of
// the connections they accepted. Each answers "REACHED-UNIX-<nonce>". The test connects to each itself first: the
// positive control that a command that reaches one would be answered. Folders this user cannot create in are left
// out, and logged.
func hostUnixSockets(t *testing.T, nonce string) ([]string, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	home, _ := os.UserHomeDir()
	var paths []string
	for _, base := range []string{"/var/lib", "/srv", "/opt", home} {
		if base == "" {
			continue
		}
		dir := filepath.Join(base, "goalbox-test-sock-"+nonce)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Logf("no socket under %s: %v", base, err)
			continue
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		_ = os.Chmod(dir, 0o755)
		sock := filepath.Join(dir, "s.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Logf("no socket under %s: %v", base, err)
			continue
		}
		t.Cleanup(func() { l.Close() })
		_ = os.Chmod(sock, 0o777)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				hits.Add(1)
				_, _ = c.Write([]byte("REACHED-UNIX-" + nonce + "\n"))
				c.Close()
			}
		}()
		// Positive control: the socket answers whoever may name it.
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("positive control: the host cannot reach its own socket %s: %v", sock, err)
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if !strings.HasPrefix(line, "REACHED-UNIX-") {
			t.Fatalf("positive control: the socket %s answered %q", sock, line)
		}
		paths = append(paths, sock)
	}
	hits.Store(0)
	return paths, &hits
}
