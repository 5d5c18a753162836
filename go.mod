module github.com/gpuinit/gpuinit

go 1.26

require (
	github.com/moby/buildkit v0.26.3
	github.com/mumax/3 v0.0.0-20261020084628-54efa12420b2
	github.com/stretchr/testify v1.11.1
	golang.org/x/sync v0.18.0
)

require (
	github.com/containerd/typeurl/v2 v2.2.3 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	google.golang.org/protobuf v1.36.10 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
