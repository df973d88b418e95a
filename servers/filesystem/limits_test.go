package main

import (
	"strings"
	"testing"
)

// TestDiskCapConfig: -max-workspace-bytes and its environment variable are read, and a cap below -1 (none) is a
// configuration error that says what is allowed.
func TestDiskCapConfig(t *testing.T) {
	dir := t.TempDir()
	err := run([]string{"filesystem", "-workspace", dir, "-max-workspace-bytes", "-2"})
	if err == nil || !strings.Contains(err.Error(), "-max-workspace-bytes must be a number of bytes, or 0 or -1 for no cap; got -2") {
		t.Errorf("flag: %v", err)
	}
	t.Setenv("GOALBOX_FS_MAX_WORKSPACE_BYTES", "-7")
	err = run([]string{"filesystem", "-workspace", dir})
	if err == nil || !strings.Contains(err.Error(), "got -7") {
		t.Errorf("environment: %v", err)
	}
}
