module github.com/goalbox/goalbox/deploy/healthprobe

go 1.26.8
