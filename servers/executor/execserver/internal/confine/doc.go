// Package confine holds what a sandboxed process applies to itself besides Landlock (package landlock) and seccomp
// (package seccomp): rlimits, the capabilities it gives up, and the report of everything put in force (Applied).
// The fallback's child init applies them to one OS thread (capabilities and no_new_privs are per thread) with
// these functions; the namespace mode's PID 1 does the same with raw system calls (the local backend's
// keeper_linux.go, which takes LastCap and Securebits from here).
package confine
