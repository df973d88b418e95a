package local

// legacyModeSyscalls: arm64 has only the *at forms of the system calls that take a mode.
func legacyModeSyscalls() []modeArg { return nil }
