module github.com/goalbox/goalbox/tests/k8s

go 1.26.8
