// Package landlock turns what a command may touch (Rules: folders to read, folders to write, device files, and
// whether TCP is handled) into a Landlock ruleset, using the best the kernel offers (go-landlock's best effort),
// and reports what was enforced. The local backend's namespace mode builds the ruleset in the server (RulesetFD)
// and each command's PID 1 enters it with raw system calls; the fallback's child init enforces it on its own
// thread (Enforce). Which folders and devices a command gets is the backend's decision, not this package's.
package landlock
