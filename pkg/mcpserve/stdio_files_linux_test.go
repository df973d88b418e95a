package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stdioChildEnv makes this test binary a -stdio server (TestStdioChild), for the tests that need Run to serve the
// process's own stdin and stdout.
const stdioChildEnv = "GOALBOX_MCPSERVE_STDIO_CHILD"

func TestStdioChild(t *testing.T) {
	if os.Getenv(stdioChildEnv) != "1" {
		t.Skip("only run as the child of TestStdioOnPipesUsesThePoller")
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := Run(context.Background(), newEchoServer(), "echo", Config{Stdio: true}, func() struct{} { return struct{}{} }, logger); err != nil {
		logger.Error("run", "err", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func nonBlocking(t *testing.T, fd uintptr) bool {
	t.Helper()
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	if errno != 0 {
		t.Fatalf("fcntl: %v", errno)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// On pipes, as an MCP client starts it, a -stdio server waits on its input through the runtime's poller (the
// pipe is non-blocking while it serves) with one P, answers calls, and leaves the pipe blocking again when it ends.
// A GOMAXPROCS in the environment is kept.
func TestStdioOnPipesUsesThePoller(t *testing.T) {
	for _, tc := range []struct {
		name, gomaxprocs, wantProcs string
	}{
		{"default", "", `"gomaxprocs":1`},
		{"GOMAXPROCS kept", "2", `"gomaxprocs":2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inR, inW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer inW.Close()
			defer inR.Close() // kept open: its file description is the child's stdin, whose mode the test reads
			fd := inR.Fd()    // also puts the pipe in blocking mode, as a client's pipe is
			cmd := exec.Command(os.Args[0], "-test.run=^TestStdioChild$")
			cmd.Env = append(os.Environ(), stdioChildEnv+"=1", "GOMAXPROCS="+tc.gomaxprocs)
			cmd.Stdin = inR
			var stderr lockedBuffer // written by the copier of the child's stderr while the test reads it
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if nonBlocking(t, fd) {
				t.Fatal("the pipe is non-blocking before the server starts: the test cannot tell")
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			replies := bufio.NewReader(out)
			send := func(line string) string {
				if _, err := inW.WriteString(line + "\n"); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(line, `"id"`) {
					reply, err := replies.ReadString('\n')
					if err != nil {
						t.Fatalf("no reply to %s: %v (stderr: %s)", line, err, stderr.String())
					}
					return reply
				}
				return ""
			}
			send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			reply := send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"through the poller"}}}`)
			if !strings.Contains(reply, `"text":"through the poller"`) {
				t.Fatalf("call: %s", reply)
			}
			if !nonBlocking(t, fd) {
				t.Error("the server's stdin is blocking while it serves: it is not waited on through the poller")
			}
			if !strings.Contains(stderr.String(), tc.wantProcs) {
				t.Errorf("the server's log does not say %s: %s", tc.wantProcs, stderr.String())
			}
			inW.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("the server did not end cleanly at the end of its input: %v (stderr: %s)", err, stderr.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the server did not end within 10s of the end of its input")
			}
			if nonBlocking(t, fd) {
				t.Error("the server left its stdin non-blocking")
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer safe to write from one goroutine while another reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
