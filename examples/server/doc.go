// Command server is an example of an inference server's GPU side over
// gpuinit. It opens the runtime without touching the driver. It queues a
// seed for every device before initialization. It mounts liveness,
// readiness and status at the Open Inference Protocol's paths. It serves
// random numbers drawn on device 0's generator. Where the backend has none,
// rng/philox draws them on the CPU, and the answer says which.
//
//	go run ./examples/server -backend sim
//	curl -i localhost:8080/v2/health/ready   # 503 "initializing: a preflight child is checking sim (attempt 1)"
//	curl -i localhost:8080/v2/health/ready   # then 200 "ready"
//	curl localhost:8080/v1/draw?n=4          # {"device":0,"seed":42,"offset":0,"source":"device","values":[…]}
//	curl localhost:8080/gpuinit/status       # state, class, bring-up, devices, losses, timeline, failure
//
// The preflight is on (-preflight 30s). A preflight child runs the driver's
// init first: this binary again, which serves it through device/backends. A
// driver that hangs or crashes in its init then takes the child down, not
// the server. A GPU that is not ready yet is retried. The first child starts
// with the server and waits, touching no driver, for the first
// initialization (-preflight-prestart).
//
// The server serves without a GPU (health.WithCPUFallback). Where the host
// has none (a CPU-only host, a CGO_ENABLED=0 build), it stays live and
// becomes ready as degraded. Its draws then come from the CPU
// ("source":"cpu"), the same stream rng/philox gives. Where a GPU is there
// but broken (a driver mismatch, a bad setting), it stays live and unready.
// The status then has the reason and the class: an operator must act.
//
// Every driver call after init runs under -call-deadline (60 s). A draw
// that hangs in the driver loses its device as hung, and readiness is 503.
// Each device's draws wait for their turn no longer than their request. A
// lost device's draws fail at once. HEAD /v1/draw draws nothing. SIGTERM
// or SIGINT ends the server within -shutdown-grace (10 s) plus a second,
// even with a draw or the initialization hung in the driver: the hung call
// goes on, but nothing waits for it. -canary 30s turns the canary on, and
// -restart-on-device-loss the liveness rule of [health.WithRestartOnDeviceLoss].
//
// # Host by host
//
// Each item is what the server, as shipped, answers on one kind of host. Each
// is a test over the fake drivers (TestEachHostSituation), and this list is
// printed from that test's own rows:
//   - a CPU-only host: no driver library. Class: no-gpu. Liveness: 200. Readiness: 200, degraded:
//     draws on the CPU. Status: class no-gpu, degraded, the failure's kind no-driver (or no-device
//     where a runtime is installed).
//   - an NVIDIA host whose GPUs are hidden on purpose (CUDA_VISIBLE_DEVICES=-1 or empty). Class:
//     no-gpu. Liveness: 200. Readiness: 200, degraded: draws on the CPU. Status: the variable that
//     hides them: CUDA_VISIBLE_DEVICES="-1" hides every GPU.
//   - a container given no GPU: no /dev/nvidia*, the host's /proc/driver/nvidia/version visible.
//     Class: no-gpu. Liveness: 200. Readiness: 200, degraded: draws on the CPU. Status: no
//     /dev/nvidiaN device node, though the NVIDIA kernel module is loaded.
//   - an AMD pod given no GPU: no /dev/kfd, the host's KFD topology in sysfs. Class: no-gpu.
//     Liveness: 200. Readiness: 200, degraded: draws on the CPU. Status: no /dev/kfd, though the
//     KFD topology lists 1 GPU(s).
//   - an AMD host whose GPUs are hidden on purpose (/dev/kfd there, HIP_VISIBLE_DEVICES=-1). Class:
//     no-gpu. Liveness: 200. Readiness: 200, degraded: draws on the CPU. Status: the variable that
//     hides them: HIP_VISIBLE_DEVICES="-1" hides every GPU.
//   - an AMD host whose GPUs are hidden on purpose (/dev/kfd there, ROCR_VISIBLE_DEVICES empty).
//     Class: no-gpu. Liveness: 200. Readiness: 200, degraded: draws on the CPU. Status: the
//     variable that hides them: ROCR_VISIBLE_DEVICES="" hides every GPU.
//   - GPU device nodes, the driver has not found the GPU yet (100). Class: not-yet. Liveness: 200
//     while retrying; 503 once retries ran out past the init deadline. Readiness: 503, retrying.
//     Status: initializing, bring_up with the attempts and last_class not-yet: /dev/nvidia0 exists,
//     so the GPU may not be ready yet.
//   - the fabric manager still starting (802). Class: not-yet. Liveness: 200 while retrying; 503
//     once retries ran out past the init deadline. Readiness: 503, retrying. Status: initializing,
//     bring_up with the attempts, last_class not-yet and CUDA_ERROR_SYSTEM_NOT_READY.
//   - user-space and kernel driver differ (803). Class: needs-operator. Liveness: 200. Readiness:
//     503: never served around on the CPU; draws 503. Status: class needs-operator, the code, its
//     name and the hint: an alert fires, no pod restarts.
//   - the server's binary removed by a rolling upgrade. Class: none. Liveness: 200. Readiness: 200.
//     Status: ready: the preflight child is the running binary (/proc/self/exe).
//   - a bad setting (GPUINIT_PREFLIGHT=bogus, a GPUINIT_CUDA_LIBRARY that names no file, a misspelt
//     variable such as GPUINIT_PREFLIGT). Class: none. Liveness: —. Readiness: —. Status: nothing:
//     the server refuses to start (exit 1), naming the variable; gpuprobe exits 2.
//
// The status carries the class, degraded, and bring_up: the phase, the
// attempts, the last error and its class, and the next attempt. An alert can
// then fire on needs-operator without a restart loop.
//
// # What the preflight costs
//
// BenchmarkBringUp measures it over the fake libcuda, whose cuInit takes
// 200 ms:
//
//	go test -run '^$' -bench BringUp -benchtime 20x ./examples/server
//
// Each iteration starts this server three times: without the preflight, with
// it cold (-preflight-prestart=false), and with its child pre-started, as
// the server runs by default. It probes readiness 100 ms after the server
// listens, which starts the initialization, and times that to the first
// readiness 200: what a first request would wait. It probes again, each
// millisecond, only from the least time the fake's inits take. The cost is
// each run's time less the same iteration's run without the preflight and
// the child's own 200 ms init. So the load of the machine, which drifts
// during a run, falls out. It also times this binary run with -h, from its
// start to its exit: the least a cold child of it can cost. Every figure is a
// median over the iterations. These are the figures of the run recorded in
// testdata/bringup-bench.txt, and a test keeps them so. To record a run,
// pipe the command above to tee that file; the test then prints the list to
// paste here.
//
// Time to ready, the medians of the recorded run (Oxide Virtual Turin-like Processor):
//   - in-process only: 206.4 ms
//   - with the preflight: 412.4 ms
//   - the preflight's cost beyond the child's own 200 ms init, pair by pair: 5.6 ms
//   - with the child started cold at the first probe, not at UsePreflight: 424.7 ms
//   - its cost, pair by pair: 19.1 ms
//   - of which the least: the server's binary run with -h, from its start to its exit: 14.8 ms
//   - after a not-yet driver recovers, ready after the retry's scheduled start: 22.3 ms
//
// A cold child's cost is mostly its start, and the machine sets it: the
// server's binary, exec'd again, runs the Go runtime's start and every
// package init ordered before device/backends. On the machine this run was
// recorded on, a C program that does nothing took 3.4 ms to start and exit,
// and a Go one with cgo 9.7 ms (perf stat -r 30). So the server pre-starts
// the child (device.Preflight.Prestart): it starts with the server, and
// waits for the first initialization's orders. What is left is the orders,
// the backend's check beyond the driver's init, the report and the child's
// exit. The child idles until the first probe, here 100 ms; an
// orchestrator's first probe comes seconds after the start.
// -args -bringup.baseline=BINARY measures another build of the server beside
// this one, in the same run: its runs without and with a cold preflight.
package main
