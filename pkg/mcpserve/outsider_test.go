package mcpserve_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestOutsiderProbe is the outsider's side of the probes below (mcptest.Outsider.Probe); skipped otherwise.
func TestOutsiderProbe(t *testing.T) { mcptest.OutsiderProbe(t) }

// TestAnotherUserIsRefused is the other-user attack on a server that Run starts as root with the defaults:
// another user of the machine (made for the test) reaches the port on loopback but is refused without the token
// and with a wrong one, and cannot read the token's file or its folder; given the right token, the same user gets
// in (positive control: the refusal is the token's doing).
func TestAnotherUserIsRefused(t *testing.T) {
	out := mcptest.NewOutsider(t)
	defer mcpserve.SetConsole(io.Discard)()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	file, err := mcpserve.DefaultTokenFile("goalbox-outsidertest", addr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(file, "/run/goalbox/") {
		t.Errorf("root's token file %s: want it under /run/goalbox, never under $HOME", file)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- mcpserve.Run(ctx, mcp.NewServer(&mcp.Implementation{Name: "t", Version: "0"}, nil), "goalbox-outsidertest",
			mcpserve.Config{Addr: addr, Workspace: t.TempDir()}, mcpserve.NoHealth, slog.New(slog.DiscardHandler))
	}()
	defer func() { cancel(); <-done }()
	var token []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if token, err = os.ReadFile(file); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no token file %s: %v", file, err)
		}
	}
	url := "http://" + addr + "/mcp"
	spec := mcptest.ProbeSpec{TokenFiles: []string{file, filepath.Dir(file)}, URLs: []string{url},
		RightToken: map[string]string{url: strings.TrimSpace(string(token))}}
	rep := out.Probe(t, "TestOutsiderProbe", spec)
	mcptest.CheckRefused(t, rep, spec)
	t.Logf("outsider uid %d: %+v", rep.UID, rep.NoToken[url])
}
