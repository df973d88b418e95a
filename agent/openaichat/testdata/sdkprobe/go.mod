module sdkprobe

go 1.26.8

require (
	github.com/goalbox/goalbox/agent v0.0.0
	github.com/openai/openai-go/v3 v3.105.0
)

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/goalbox/goalbox/pkg v0.0.0 // indirect
	github.com/moby/profiles/seccomp v0.3.0 // indirect
	github.com/opencontainers/runtime-spec v1.3.0 // indirect
	github.com/tidwall/gjson v1.20.1 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
)

replace (
	github.com/goalbox/goalbox/agent => ../../..
	github.com/goalbox/goalbox/pkg => ../../../../pkg
	github.com/goalbox/goalbox/servers/executor => ../../../../servers/executor
	github.com/goalbox/goalbox/servers/filesystem => ../../../../servers/filesystem
)
