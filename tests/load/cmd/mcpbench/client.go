package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// The client writes pre-encoded requests and only scans each reply for its id and an error marker, so that its
// own cost per call is a few microseconds and the figures measure the servers.

const (
	initRequest = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcpbench","version":"1"}}}`
	initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// callRequest is a tools/call with the given id; args is the arguments' JSON.
func callRequest(id int, tool, args string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
}

// failed reports a reply that is a JSON-RPC error or a tool error.
func failed(reply []byte) bool {
	return bytes.Contains(reply, []byte(`"isError":true`)) || bytes.Contains(reply, []byte(`"error":{`))
}

// replyID is the id of a reply line, -1 when it has none (a notification).
func replyID(line []byte) int {
	i := bytes.Index(line, []byte(`"id":`))
	if i < 0 {
		return -1
	}
	j := i + 5
	for j < len(line) && line[j] >= '0' && line[j] <= '9' {
		j++
	}
	id, err := strconv.Atoi(string(line[i+5 : j]))
	if err != nil {
		return -1
	}
	return id
}

// stdioServer is a server process spoken to over its stdin and stdout, one call in flight.
type stdioServer struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	next int
}

func startStdio(argv []string, stderr io.Writer) (*stdioServer, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	s := &stdioServer{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), next: 1}
	if _, err := s.roundTrip([]byte(initRequest), 0); err != nil {
		s.stop()
		return nil, fmt.Errorf("initialize %s: %w", argv[0], err)
	}
	if _, err := in.Write([]byte(initialized + "\n")); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *stdioServer) pid() int { return s.cmd.Process.Pid }

// roundTrip writes one request line and reads lines until the reply with id.
func (s *stdioServer) roundTrip(req []byte, id int) ([]byte, error) {
	if _, err := s.in.Write(append(req, '\n')); err != nil {
		return nil, err
	}
	for {
		line, err := s.out.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return nil, fmt.Errorf("reply longer than %d bytes", s.out.Size())
		}
		if err != nil {
			return nil, fmt.Errorf("server closed its output: %w", err)
		}
		if replyID(line) == id {
			return line, nil
		}
	}
}

func (s *stdioServer) call(tool, args string) error {
	id := s.next
	s.next++
	reply, err := s.roundTrip(callRequest(id, tool, args), id)
	if err != nil {
		return err
	}
	if failed(reply) {
		return fmt.Errorf("%s failed: %.300s", tool, reply)
	}
	return nil
}

// stop closes the server's input, which ends it, and kills it if it lingers.
func (s *stdioServer) stop() {
	s.in.Close()
	t := time.AfterFunc(5*time.Second, func() { s.cmd.Process.Kill() })
	s.cmd.Wait()
	t.Stop()
}

// httpSession is one MCP session over streamable HTTP on a connection of its own.
type httpSession struct {
	url    string
	token  string // the server's bearer token, sent on every request
	client *http.Client
	sid    string
	next   int
}

func newHTTPSession(url, token string) (*httpSession, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: 2, MaxConnsPerHost: 2, DisableCompression: true}
	h := &httpSession{url: url, token: token, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}, next: 1}
	body, sid, err := h.post([]byte(initRequest))
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if sid == "" {
		return nil, fmt.Errorf("initialize: no session id in %.200s", body)
	}
	h.sid = sid
	if _, _, err := h.post([]byte(initialized)); err != nil {
		return nil, err
	}
	return h, nil
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (h *httpSession) post(body []byte) ([]byte, string, error) {
	req, err := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("Authorization", "Bearer "+h.token)
	if h.sid != "" {
		req.Header.Set("Mcp-Session-Id", h.sid)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, "", err
	}
	if resp.StatusCode/100 != 2 {
		return nil, "", fmt.Errorf("HTTP %d: %.300s", resp.StatusCode, buf.Bytes())
	}
	// Only the first bytes are kept: enough to tell an error from a result.
	head := bytes.Clone(buf.Bytes()[:min(buf.Len(), 512)])
	if failed(buf.Bytes()) {
		return nil, "", fmt.Errorf("call failed: %.300s", buf.Bytes())
	}
	return head, resp.Header.Get("Mcp-Session-Id"), nil
}

func (h *httpSession) call(tool, args string) error {
	id := h.next
	h.next++
	_, _, err := h.post(callRequest(id, tool, args))
	return err
}

func (h *httpSession) close() {
	req, _ := http.NewRequest(http.MethodDelete, h.url, nil)
	req.Header.Set("Mcp-Session-Id", h.sid)
	req.Header.Set("Authorization", "Bearer "+h.token)
	if resp, err := h.client.Do(req); err == nil {
		resp.Body.Close()
	}
	h.client.CloseIdleConnections()
}

// discard is where a server's stderr goes unless -v.
var discard io.Writer = io.Discard

func init() {
	if os.Getenv("MCPBENCH_VERBOSE") != "" {
		discard = os.Stderr
	}
}
