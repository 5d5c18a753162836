module github.com/gpuinit/gpuinit/build

go 1.26.0

require (
	github.com/gpuinit/gpuinit v0.0.0
	github.com/moby/buildkit v0.26.3
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5
)

require (
	github.com/containerd/typeurl/v2 v2.2.3 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect
	google.golang.org/protobuf v1.36.10 // indirect
)

// The fake drivers (internal/fakedriver) come from this checkout's root module.
replace github.com/gpuinit/gpuinit => ../
