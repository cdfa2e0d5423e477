module github.com/sluicelog/sluice

go 1.26.8
