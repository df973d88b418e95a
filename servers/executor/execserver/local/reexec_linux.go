package local

// The helpers are the running binary re-executed: an init() here recognises them by os.Args[0], so every binary
// that links this package (the server, the agent, test binaries) can host them.

import (
	"os"

	"github.com/goalbox/goalbox/servers/executor/execserver/internal/childinit"
)

func init() {
	if len(os.Args) > 0 {
		switch os.Args[0] {
		case childinit.Arg0:
			os.Exit(childinit.Main())
		case holderArg0:
			os.Exit(holderMain())
		}
	}
}
