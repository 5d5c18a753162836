module github.com/gpuinit/gpuinit/tools

go 1.26
