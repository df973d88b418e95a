package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// workload is one kind of call; the servers name their tools and paths differently.
type workload struct {
	name string
	// call is the tool and arguments for a server: goalbox takes workspace-relative paths, the anchor absolute ones.
	call func(s server) (tool, args string)
}

func readWorkload() workload {
	return workload{name: "read 16 KiB", call: func(s server) (string, string) {
		if s.goalbox {
			return "sandbox_read_file", `{"path":"read16k.txt"}`
		}
		return "read_text_file", jsonArgs(map[string]string{"path": filepath.Join(s.ws, "read16k.txt")})
	}}
}

// tinyReadWorkload reads a one-byte file: what a call costs a server whatever its result (the protocol, the
// runtime, the pipes), the floor under the 16 KiB read.
func tinyReadWorkload() workload {
	return workload{name: "read 1 B", call: func(s server) (string, string) {
		if s.goalbox {
			return "sandbox_read_file", `{"path":"read1b.txt"}`
		}
		return "read_text_file", jsonArgs(map[string]string{"path": filepath.Join(s.ws, "read1b.txt")})
	}}
}

func writeWorkload(content string) workload {
	return workload{name: "write 4 KiB", call: func(s server) (string, string) {
		if s.goalbox {
			return "sandbox_write_file", jsonArgs(map[string]string{"path": "written-by-goalbox.txt", "content": content})
		}
		return "write_file", jsonArgs(map[string]string{"path": filepath.Join(s.ws, "written-by-anchor.txt"), "content": content})
	}}
}

func jsonArgs(m map[string]string) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// server is a server to measure: its command over stdio, and over HTTP for goalbox.
type server struct {
	name    string
	goalbox bool
	bin     string
	ws      string
}

func goalbox(bin, ws string) server { return server{name: "goalbox", goalbox: true, bin: bin, ws: ws} }
func anchor(bin, ws string) server  { return server{name: "official (Node)", bin: bin, ws: ws} }

func (s server) stdioArgv() []string {
	if s.goalbox {
		return []string{s.bin, "-stdio", "-workspace", s.ws, "-log-level", "warn"}
	}
	return []string{s.bin, s.ws}
}

// stdio starts the server, measures calls of w with one caller, and stops it.
func (s server) stdio(w workload, calls int) (figure, error) {
	srv, err := startStdio(s.stdioArgv(), discard)
	if err != nil {
		return figure{}, err
	}
	defer srv.stop()
	tool, args := w.call(s)
	f, err := measure(srv.pid(), calls, 200, []caller{func() error { return srv.call(tool, args) }})
	f.Server, f.Workload, f.Transport = s.name, w.name, "stdio"
	return f, err
}

// http starts goalbox on a free loopback port, measures calls of w spread over callers sessions, and stops it.
func (s server) http(w workload, calls, callers int) (figure, error) {
	port, err := freePort()
	if err != nil {
		return figure{}, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	// No token given: goalbox generates one, as for a user, and the sessions send it (its check is part of a
	// request's cost).
	tokenDir, err := os.MkdirTemp("", "mcpbench-token-")
	if err != nil {
		return figure{}, err
	}
	defer os.RemoveAll(tokenDir)
	tokenFile := filepath.Join(tokenDir, "token")
	cmd := exec.Command(s.bin, "-addr", addr, "-workspace", s.ws, "-log-level", "warn", "-token-file", tokenFile)
	cmd.Stderr = discard
	if err := cmd.Start(); err != nil {
		return figure{}, err
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		t := time.AfterFunc(5*time.Second, func() { cmd.Process.Kill() })
		cmd.Wait()
		t.Stop()
	}()
	if err := waitHealthy("http://" + addr + "/healthz"); err != nil {
		return figure{}, err
	}
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return figure{}, fmt.Errorf("the server wrote no token file: %w", err)
	}
	tool, args := w.call(s)
	var cs []caller
	for range callers {
		h, err := newHTTPSession("http://"+addr+"/mcp", strings.TrimSpace(string(token)))
		if err != nil {
			return figure{}, err
		}
		defer h.close()
		cs = append(cs, func() error { return h.call(tool, args) })
	}
	f, err := measure(cmd.Process.Pid, calls, 50*callers, cs)
	f.Server, f.Workload, f.Transport = s.name, w.name, "HTTP"
	return f, err
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitHealthy(url string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the server did not answer %s within 10s", url)
}
