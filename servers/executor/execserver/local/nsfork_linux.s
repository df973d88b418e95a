// Empty: lets nsfork_linux.go declare the runtime's fork hooks without bodies (go:linkname).
