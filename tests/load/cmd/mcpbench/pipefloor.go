package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// The pipe floor: what one caller over stdio can get from a server that does nothing but answer — no MCP, no tool,
// no JSON — with the bytes goalbox answers a 16 KiB read with. mcpbench starts itself as that server (echoEnv names
// a file holding the reply). Its calls/s bound every stdio server's on this machine with this client: the pipes,
// the wake-ups and the copying of the reply, and nothing else.

const echoEnv = "MCPBENCH_ECHO_REPLY"

// echoInit answers the client's initialize.
const echoInit = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"pipe floor","version":"1"}}}`

// serveEcho is the floor's server: each request line with an id is answered at once with the reply read from file,
// its id replaced by the request's.
func serveEcho(file string) error {
	reply, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	i := bytes.Index(reply, []byte(`"id":`))
	if i < 0 {
		return fmt.Errorf("%s: no id in the reply", file)
	}
	j := i + 5
	for j < len(reply) && reply[j] >= '0' && reply[j] <= '9' {
		j++
	}
	head, tail := reply[:i+5], bytes.TrimRight(reply[j:], "\n")
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := make([]byte, 0, len(reply)+32)
	for {
		line, err := in.ReadSlice('\n')
		if err != nil {
			return nil // the client closed our input
		}
		id := replyID(line)
		switch {
		case id < 0: // a notification
			continue
		case id == 0:
			out = append(append(out[:0], echoInit...), '\n')
		default:
			out = append(append(strconv.AppendInt(append(out[:0], head...), int64(id), 10), tail...), '\n')
		}
		if _, err := os.Stdout.Write(out); err != nil {
			return err
		}
	}
}

// pipeFloor measures the floor with goalbox's reply to w (taken from one call to s) and calls calls.
func pipeFloor(s server, w workload, calls int, dir string) (figure, error) {
	srv, err := startStdio(s.stdioArgv(), discard)
	if err != nil {
		return figure{}, err
	}
	tool, args := w.call(s)
	id := srv.next
	srv.next++
	reply, err := srv.roundTrip(callRequest(id, tool, args), id)
	if err == nil && failed(reply) {
		err = fmt.Errorf("%s failed: %.300s", tool, reply)
	}
	if err != nil {
		srv.stop()
		return figure{}, err
	}
	file := dir + "/echo-reply.json"
	err = os.WriteFile(file, reply, 0o644)
	srv.stop()
	if err != nil {
		return figure{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return figure{}, err
	}
	os.Setenv(echoEnv, file)
	defer os.Unsetenv(echoEnv)
	echo, err := startStdio([]string{self}, discard)
	if err != nil {
		return figure{}, err
	}
	defer echo.stop()
	f, err := measure(echo.pid(), calls, 200, []caller{func() error { return echo.call(tool, args) }})
	f.Server, f.Workload, f.Transport = "pipe floor", w.name, "stdio"
	f.Note = fmt.Sprintf("a Go process answering each call with goalbox's %d-byte reply, nothing else", len(reply))
	return f, err
}
