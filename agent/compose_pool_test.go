package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/bench/benchtest"
)

// TestComposePool runs scripts/compose-pool.sh as a user would: two compose stacks and their pool file, the
// selftest over them (both stacks grade), then again with the second stack killed (drained, every verdict still
// ok). Like TestComposeStack it needs GOALBOX_COMPOSE_TEST=1; GOALBOX_POOL_BUILD=0 reuses images already built.
func TestComposePool(t *testing.T) {
	requireCompose(t)
	dir := benchtest.Dir(t)
	script, err := filepath.Abs(filepath.Join("..", "scripts", "compose-pool.sh"))
	if err != nil {
		t.Fatal(err)
	}
	prefix := "goalbox-pool-e2e-" + randomHex(t, 4)
	base := freePortRun(t, 4)
	env := append(os.Environ(), "COMPOSE_BAKE=false", "GOALBOX_POOL_PROJECT="+prefix, fmt.Sprintf("GOALBOX_POOL_PORT=%d", base))
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Minute))
		t.Cleanup(cancel)
	}
	pool := func(ctx context.Context, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, script, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if out, err := pool(context.Background(), "down", "2"); err != nil {
			t.Errorf("compose-pool.sh down: %v\n%s", err, out)
		}
	})
	file := filepath.Join(t.TempDir(), "pool.txt")
	if out, err := pool(ctx, "up", "2", file); err != nil {
		t.Fatalf("compose-pool.sh up: %v\n%s", err, out)
	}
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("pool file: %v %v (it holds tokens: 0600)", info, err)
	}
	args := []string{"-selftest", "-sandbox-pool", file, "-benchmarks-dir", dir, "-languages", "python", "-keywords", "proverb,pig-latin,bottle-song"}
	out := filepath.Join(t.TempDir(), "st")
	r := runCmdEnv(t, ctx, nil, nil, append(args, "-results", out)...)
	if r.code != exitMet {
		t.Fatalf("selftest over the compose pool: exit %d", r.code)
	}
	used := map[string]bool{}
	for _, res := range readSelfTest(t, out) {
		used[res.Sandbox] = true
	}
	first, second := fmt.Sprintf("127.0.0.1:%d", base), fmt.Sprintf("127.0.0.1:%d", base+2)
	if !used[first] || !used[second] {
		t.Errorf("both stacks should grade: %v", used)
	}

	kill := exec.CommandContext(ctx, "docker", "compose", "-p", prefix+"-2", "-f", filepath.Join(filepath.Dir(script), "..", "deploy", "compose.yaml"), "kill")
	kill.Env = env
	if b, err := kill.CombinedOutput(); err != nil {
		t.Fatalf("compose kill: %v\n%s", err, b)
	}
	out = filepath.Join(t.TempDir(), "st2")
	r = runCmdEnv(t, ctx, nil, nil, append(args, "-results", out)...)
	if r.code != exitMet || !strings.Contains(r.stderr, "sandbox "+second+" taken out of the pool (1 left)") {
		t.Fatalf("selftest with a stack killed: exit %d", r.code)
	}
	for _, res := range readSelfTest(t, out) {
		if res.Status != "ok" || res.Sandbox != first {
			t.Errorf("%s: %s on %s", res.ID, res.Status, res.Sandbox)
		}
	}
}

// freePortRun finds n consecutive loopback ports that are free now.
func freePortRun(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		base := freePort(t)
		ok := true
		for p := base; p < base+n && ok; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				continue
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return 0
}
