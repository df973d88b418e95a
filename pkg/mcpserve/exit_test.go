package mcpserve_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve"
)

// TestExitCode: both servers' one policy: 0 for a clean end or -h, 2 for configuration (however wrapped), 1 for a
// failure while serving; the error is printed after the server's name.
func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		says string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{mcpserve.ConfigError(errors.New("no workspace")), 2, "srv: no workspace\n"},
		{fmt.Errorf("backend: %w", mcpserve.ConfigError(errors.New("docker is down"))), 2, "srv: backend: docker is down\n"},
		{errors.New("listen on :1: permission denied"), 1, "srv: listen on :1: permission denied\n"},
	} {
		var stderr bytes.Buffer
		if code := mcpserve.ExitCode("srv", c.err, &stderr); code != c.code || stderr.String() != c.says {
			t.Errorf("%v: exit %d saying %q, want %d saying %q", c.err, code, stderr.String(), c.code, c.says)
		}
	}
	if mcpserve.ConfigError(nil) != nil {
		t.Error("ConfigError(nil) is not nil")
	}
}

// TestLoadVersion: -version is answered before the configuration is checked (no workspace needed).
func TestLoadVersion(t *testing.T) {
	var cfg mcpserve.Config
	if _, err := mcpserve.Load(&cfg, "GOALBOX_NONE_", []string{"srv", "-version"}, nil); !errors.Is(err, mcpserve.ErrVersion) {
		t.Errorf("-version: %v", err)
	}
	if v := mcpserve.Version(); v == "" {
		t.Error("empty version")
	}
}
