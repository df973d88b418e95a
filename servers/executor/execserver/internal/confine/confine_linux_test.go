package confine

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
)

// capSets reads the calling thread's capability sets (effective, permitted, bounding, ambient) from
// /proc/thread-self/status.
func capSets(t *testing.T) map[string]string {
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		t.Error(err)
		return nil
	}
	sets := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		for _, k := range []string{"CapEff", "CapPrm", "CapBnd", "CapAmb"} {
			if v, ok := strings.CutPrefix(line, k+":"); ok {
				sets[k] = strings.TrimSpace(v)
			}
		}
	}
	return sets
}

// TestDropCapabilitiesLeavesNone drops a root thread's capabilities: every set is empty after, where before (the
// control) the thread had them.
func TestDropCapabilitiesLeavesNone(t *testing.T) {
	if os.Geteuid() != 0 {
		ciskip.Skip(t, "needs root: an ordinary user's thread has no capability to drop")
	}
	done := make(chan struct{})
	var before, after map[string]string
	var applied Applied
	var err error
	go func() {
		defer close(done)
		// Never unlocked: the thread without capabilities ends with this goroutine and is never reused.
		runtime.LockOSThread()
		before = capSets(t)
		err = DropCapabilities(&applied)
		after = capSets(t)
	}()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	const none = "0000000000000000"
	if before["CapEff"] == none || before["CapBnd"] == none {
		t.Fatalf("control: a root thread has no capability before the drop: %v", before)
	}
	for _, k := range []string{"CapEff", "CapPrm", "CapBnd", "CapAmb"} {
		if after[k] != none {
			t.Errorf("%s is %s after the drop", k, after[k])
		}
	}
	if !applied.CapsDropped || !applied.BoundingDropped {
		t.Errorf("the report says %+v", applied)
	}
}
