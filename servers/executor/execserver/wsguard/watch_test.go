package wsguard

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
)

// TestWatchAppliesWhileRunningAndOnceAtTheEnd: a command running 5 s gets its layer applied at 2 s and 4 s, then once
// more by finish, whose answer is that last apply's; a second finish applies nothing more.
func TestWatchAppliesWhileRunningAndOnceAtTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var applies atomic.Int32
		finish := Watch(func() []protocol.WorkspaceRefusal {
			n := applies.Add(1)
			return []protocol.WorkspaceRefusal{{Path: strconv.Itoa(int(n))}}
		})
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := applies.Load(); n != 2 {
			t.Fatalf("%d applies in 5 s, want 2 (every %s)", n, ApplyEvery)
		}
		if got := finish(); len(got) != 1 || got[0].Path != "3" {
			t.Fatalf("finish = %v, want the third apply's refusals", got)
		}
		if got := finish(); got[0].Path != "3" || applies.Load() != 3 {
			t.Fatalf("a second finish applied again or answered otherwise: %v after %d applies", got, applies.Load())
		}
		time.Sleep(10 * time.Second)
		if applies.Load() != 3 {
			t.Fatalf("applies went on after finish: %d", applies.Load())
		}
	})
}

// TestFallbackRefusesWhatItCannotGuard: a workspace the fallback guard cannot open refuses every change, and says so
// once through log; the control opens a real workspace and applies nothing refused from an empty upper folder.
func TestFallbackRefusesWhatItCannotGuard(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var logged int
	var f Fallback
	apply := f.Apply(notADir, func(error) { logged++ })
	if got := apply(t.TempDir()); len(got) != 1 || got[0].Path != "." {
		t.Fatalf("a workspace that cannot be opened applied: %v", got)
	}
	f.Apply("ignored", func(error) { logged++ })
	if logged != 1 {
		t.Fatalf("logged %d times, want once", logged)
	}
	var ok Fallback
	defer ok.Close()
	if got := ok.Apply(t.TempDir(), func(err error) { t.Fatal(err) })(t.TempDir()); len(got) != 0 {
		t.Fatalf("an empty layer was refused: %v", got)
	}
}
