module github.com/gpuinit/gpuinit

go 1.26.0

require (
	github.com/mumax/3 v0.0.0-20261020084628-54efa12420b2
	github.com/stretchr/testify v1.12.1
	golang.org/x/sync v0.25.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
