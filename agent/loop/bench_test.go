package loop_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/agent/openaichat"
	"github.com/goalbox/goalbox/agent/sandbox"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// The agent's own time per turn is what is left of a turn after the model call and the tool calls: building the
// request, compacting results, eliding, the transcript and progress lines. The model here is the scripted server
// answering at once and the tools are the real servers in-process, so a turn is as short as it can be and the
// agent's share is measured, not guessed. Timing wrappers delegate to the real model and sandbox.

type timedModel struct {
	loop.Model
	spent *time.Duration
}

func (m timedModel) Complete(ctx context.Context, msgs []loop.Message, tools []loop.Tool) (loop.Reply, error) {
	t0 := time.Now()
	defer func() { *m.spent += time.Since(t0) }()
	return m.Model.Complete(ctx, msgs, tools)
}

type timedSandbox struct {
	loop.Sandbox
	spent *time.Duration
}

func (s timedSandbox) Call(ctx context.Context, name string, args json.RawMessage) (loop.ToolResult, error) {
	t0 := time.Now()
	defer func() { *s.spent += time.Since(t0) }()
	return s.Sandbox.Call(ctx, name, args)
}

// benchSetup starts the servers over a workspace holding a 4 KiB file, and a scripted model that reads it every turn.
func benchSetup(b *testing.B) (loop.Sandbox, loop.Model) {
	ws := b.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte(strings.Repeat("some text in a file\n", 205)), 0o644); err != nil {
		b.Fatal(err)
	}
	sb, err := sandbox.Host(context.Background(), sandbox.LocalOptions{Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sb.Close() })
	srv := looptest.New(b)
	srv.Repeat = &looptest.Step{Calls: []looptest.Call{{Name: protocol.ToolReadFile, Args: `{"path":"f.txt"}`}}}
	model, err := openaichat.New(openaichat.Config{Model: "scripted", BaseURL: srv.BaseURL, APIKey: "k"})
	if err != nil {
		b.Fatal(err)
	}
	return sb, model
}

// BenchmarkTurn runs 20-turn goals; per turn it reports the whole turn, the model call, the tool call, and the
// agent's own time (the rest).
func BenchmarkTurn(b *testing.B) {
	const turns = 20
	sb, model := benchSetup(b)
	var inModel, inTools time.Duration
	tf, err := os.Create(filepath.Join(b.TempDir(), "transcript.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer tf.Close()
	limits := loop.DefaultLimits()
	limits.MaxTurns = turns
	cfg := loop.Config{Goal: "read f.txt again and again", Limits: limits, Observers: []loop.Observer{loop.NewTranscript(tf), loop.NewProgress(io.Discard)}}
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		res, err := loop.Run(context.Background(), cfg, timedModel{model, &inModel}, timedSandbox{sb, &inTools})
		if err != nil || res.Turns != turns || res.StopReason != loop.StopMaxTurns {
			b.Fatalf("run: %v, %+v", err, res)
		}
	}
	n := float64(b.N * turns)
	total := time.Since(start)
	b.ReportMetric(float64(total.Microseconds())/n/1000, "turn-ms")
	b.ReportMetric(float64(inModel.Microseconds())/n/1000, "model-ms/turn")
	b.ReportMetric(float64(inTools.Microseconds())/n/1000, "tool-ms/turn")
	b.ReportMetric(float64((total-inModel-inTools).Microseconds())/n/1000, "agent-ms/turn")
}

// BenchmarkToolCallRaw is the anchor: the same tool call straight through the MCP client, no loop around it.
func BenchmarkToolCallRaw(b *testing.B) {
	sb, _ := benchSetup(b)
	args := json.RawMessage(`{"path":"f.txt"}`)
	for b.Loop() {
		if res, err := sb.Call(context.Background(), protocol.ToolReadFile, args); err != nil || res.IsError {
			b.Fatal(err, res.Text)
		}
	}
}
