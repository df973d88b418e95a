package seccomp

// legacySyscallNumbers: arm64 has only the *at forms of the system calls that take a mode.
var legacySyscallNumbers = map[string]int{}
