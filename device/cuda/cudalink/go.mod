module github.com/gpuinit/gpuinit/device/cuda/cudalink

go 1.26.0

require (
	github.com/gpuinit/gpuinit v0.0.0
	github.com/mumax/3 v0.0.0-20261020084628-54efa12420b2
)

replace github.com/gpuinit/gpuinit => ../../..
