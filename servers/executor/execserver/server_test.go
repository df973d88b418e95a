package execserver

import (
	"fmt"
	"testing"
)

func TestAdvertiseReplacesTheWorkspacePathOnly(t *testing.T) {
	in := map[string]any{
		"write_dirs": []string{"/srv/ws", "/srv/ws/sub", "/srv/ws2", "/srv/wsx/a", "/cache/home"},
		"note":       "writes in /srv/ws and /srv/ws/tmp, not /other/srv/ws or /srv/ws-old",
		"nested":     map[string]any{"list": []any{"/srv/ws", 3}},
		"n":          7,
	}
	got := advertise(in, "/srv/ws", "/workspace").(map[string]any)
	want := map[string]any{
		"write_dirs": []string{"/workspace", "/workspace/sub", "/srv/ws2", "/srv/wsx/a", "/cache/home"},
		"note":       "writes in /workspace and /workspace/tmp, not /other/srv/ws or /srv/ws-old",
		"nested":     map[string]any{"list": []any{"/workspace", 3}},
		"n":          7,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("advertise:\n got %v\nwant %v", got, want)
	}
}
