package seccomp

// archFilterCases: arm64 has no x32 ABI and only the *at forms of the mode-taking system calls.
func archFilterCases() []filterCase { return nil }
