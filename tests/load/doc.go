// Package load holds goalbox's load test (load_test.go): 64 concurrent clients × 1,000 mixed calls over streamable
// HTTP against both servers, built from this repository and run as separate processes over one workspace, then
// checks for transport errors, torn or lost files and leaked memory, descriptors, goroutines, processes and
// cgroups. It needs only the standard library: the client is a lean raw JSON-RPC client, so the servers, not the
// client, are what is measured. See docs/load.md.
package load
