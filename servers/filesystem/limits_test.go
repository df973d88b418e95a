package main

import (
	"strings"
	"testing"
)

// TestDiskCapConfig: -max-workspace-bytes and its environment variable reach the guard, and a negative cap is a
// configuration error that says what is allowed.
func TestDiskCapConfig(t *testing.T) {
	dir := t.TempDir()
	err := run([]string{"filesystem", "-workspace", dir, "-max-workspace-bytes", "-1"})
	if err == nil || !strings.Contains(err.Error(), "-max-workspace-bytes must be 0 (no cap) or positive, got -1") {
		t.Errorf("flag: %v", err)
	}
	t.Setenv("GOALBOX_FS_MAX_WORKSPACE_BYTES", "-7")
	err = run([]string{"filesystem", "-workspace", dir})
	if err == nil || !strings.Contains(err.Error(), "got -7") {
		t.Errorf("environment: %v", err)
	}
}
