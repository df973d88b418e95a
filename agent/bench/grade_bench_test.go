package bench

import (
	"context"
	"testing"

	"github.com/goalbox/goalbox/agent/loop"
)

// BenchmarkGrade measures one grade of a passing python exercise three ways, side by side: the bare test command
// on the host (the anchor), Grade on the host (adds the restore), and Grade through the confined executor over
// MCP (what production does). The differences are the grader's and the sandbox's overhead per grade.
//
//	go test ./bench -run '^$' -bench Grade -benchtime 20x
func BenchmarkGrade(b *testing.B) {
	ex := oneExercise(b, "python", "two-bucket")
	ctx := context.Background()
	g := NewGrader()
	ws, err := Prepare(ex, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := PlaceReference(ex, ws); err != nil {
		b.Fatal(err)
	}
	host := localSandbox{root: ws.Root}
	cmd, why, err := g.Command(ctx, host, ex)
	if err != nil || why != "" {
		b.Skip("python cannot be graded here: ", why, err)
	}
	exec, closeExec, err := inProcessSandbox(g.Toolchains, GraderCacheDir())(ctx, ws.Root)
	if err != nil {
		b.Fatal(err)
	}
	defer closeExec()

	b.Run("bare-command", func(b *testing.B) {
		for b.Loop() {
			if code, out, err := host.run(ctx, cmd, ws.Rel, DefaultGradeTimeout); err != nil || code != 0 {
				b.Fatalf("exit %d %v\n%s", code, err, out)
			}
		}
	})
	for _, c := range []struct {
		name string
		sb   loop.Sandbox
	}{{"grade-host", host}, {"grade-executor", exec}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				res, err := g.Grade(ctx, c.sb, ex, ws)
				if err != nil || !res.Passed {
					b.Fatalf("%+v %v", res, err)
				}
			}
		})
	}
}
