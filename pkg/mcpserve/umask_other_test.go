//go:build !unix

package mcpserve

func setUmask(int) func() { return func() {} }
