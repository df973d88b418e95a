module github.com/goalbox/goalbox/tests/load

go 1.26.8

require golang.org/x/sync v0.23.0
