// Package childinit is the local backend's fallback sandbox, used where the server may not create namespaces (a
// container without CAP_SYS_ADMIN): every command runs through a copy of the server's own binary, re-executed in
// "init" mode (argv[0] is Arg0, and the local package's init() calls Main). The init confines the shell it starts
// — never the server — and stays behind to reap and to kill:
//
//  1. It is a child subreaper: orphans of the command (double forks, setsid) are reparented to it, and it kills
//     every descendant before it exits.
//  2. It sets the rlimits, then, on one locked OS thread, sets no_new_privs, installs a seccomp filter (no Internet
//     sockets, no signals to the server or the init, no ptrace; package seccomp), enforces the Landlock ruleset
//     (with its TCP rules, as there is no private network namespace), drops every capability and forks sh -c from
//     that thread. The init's main thread stays outside the Landlock domain, so with Landlock's signal scoping the
//     command cannot kill its own init to orphan its children.
//  3. It reads its Config from fd 3 and then keeps reading: EOF on fd 3 (the server closed it, or the server
//     died) means kill everything now. It reports on fd 4: first what confinement it applied, then how sh ended.
//
// The server's side (Send, Reports, Collect) is here too; when to start an init, its pipes and its cgroups are the
// local backend's (initpool_linux.go). Where namespaces are permitted, the backend's holder forks each command
// instead (nsfork_linux.go), re-executed once per backend, not once per command.
package childinit
