module github.com/goalbox/goalbox/tests/agents

go 1.26.8
