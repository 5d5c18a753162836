// Package health serves a GPU server's liveness, readiness and status.
//
// A [Health] answers for the [device.Runtime] that brings the server's GPUs
// up. It serves the paths of KServe's Open Inference Protocol, which Triton
// and KServe implement: GET /v2/health/live and GET /v2/health/ready. It
// also serves a JSON status at /gpuinit/status ([Health.Mount]).
//
// Readiness never blocks on initialization: it reads the Runtime's state. It
// answers 200 when the Runtime is Ready and no device it serves is lost.
// Otherwise it answers 503 with the reason; 503 is what KServe answers for
// "not ready". By default the first readiness probe starts the
// initialization in the background. An orchestrator sends no traffic to a
// pod that is not ready, so a purely lazy pod would never become ready.
// [WithoutAutoInit] turns that off.
//
// A server that can serve on the CPU says so with [WithCPUFallback]. Once
// initialization has failed because the host has no GPU
// ([device.FallBackToCPU]), readiness is 200 and the status says degraded. A
// GPU that is there but broken, or not ready yet, keeps readiness at 503.
//
// Liveness fails only where a restart of this process can help, by the
// failure's class ([device.ClassOf]). It fails in three cases:
//   - The in-process part of the initialization (the driver's init, then
//     the queued work) has run past its deadline: the process is wedged.
//     The deadline is set by [WithInitDeadline]; the default is
//     [DefaultInitDeadline].
//   - The initialization failed for a reason expected to clear (not-yet: a
//     fresh process may succeed), and the same deadline has passed since it
//     started. The GPU has had its time to come up.
//   - With [WithRestartOnDeviceLoss], a device was lost after init.
//
// A failure of class no-gpu or needs-operator leaves liveness at 200. A
// restart cannot help, and a Kubernetes pod must not crash-loop for it.
// Readiness, the status and gpuprobe's metrics carry the class, so that an
// alert can fire. Preflight children and the waits between their retries
// never fail liveness. They run in other processes, under their own
// deadlines. Liveness is safe from the first second, so no Kubernetes
// startupProbe is needed. One on the readiness path would restart a pod
// whose host has no GPU: the crash loop this avoids. The Kubernetes section
// below has a probe block.
//
// Both probes are allocation-free on every path but a failure's first
// answer. They never call the backend. One earlier run of
// go test -run '^$' -bench . -benchmem ./device/health measured readiness at
// 19.6 ns and liveness at 18.0 ns while a preflight waits. On a ready Runtime
// whose health watch runs, they took 28.5 ns and 27.6 ns. Each made 0
// allocations. A Health is safe for concurrent use.
// It logs, through [log/slog], the state changes it observes. It holds no
// global state. [Health.Close] releases the background initialization's
// waiter.
//
// # State by state
//
// What the probes answer, by the Runtime's state:
//   - Initializing, while a preflight child runs or a retry waits: liveness 200; readiness 503,
//     with the attempt and the last failure.
//   - Initializing in the process past the init deadline (5 minutes): liveness 503, since the
//     process is wedged; readiness 503.
//   - Failed, not-yet (the retries ran out), within the init deadline since init began: liveness
//     200; readiness 503.
//   - Failed, not-yet, past the init deadline since init began: liveness 503, since a fresh
//     process may get the GPU; readiness 503. Never with WithInitDeadline(0).
//   - Failed, no-gpu: liveness 200, since a restart cannot help and must not crash-loop;
//     readiness 503 with the class. With WithCPUFallback, readiness is 200 and the status says
//     degraded.
//   - Failed, needs-operator: liveness 200, since a restart cannot help; readiness 503 with the
//     class, with WithCPUFallback or not. A broken GPU never hides behind the CPU.
//   - Ready, a device lost: liveness 200 (503 with WithRestartOnDeviceLoss); readiness 503,
//     naming the device and the loss's source. A loss comes from the engine's report, a call
//     past its deadline, an Xid, ECC, RAS or the canary.
//
// # The status
//
// GET /gpuinit/status answers a [Status] as JSON, schema gpuinit-health/v1 ([StatusSchema]).
// It is one moment's: the state, the failure, the timeline, the devices and the losses agree
// with one another. It carries the class, degraded, and bring_up: the phase, the attempts, the
// last error and its class, and the next attempt. An alert can then fire on needs-operator
// without a restart loop. Each device has its health and its last canary ([WithCanary]). Each
// loss has its source. The queued calls that failed are in failed_calls, each with the call
// site that queued it. The fields of [Status] and the types it holds say the rest.
//
// # Verdicts
//
// Each device has one verdict in [device.DeviceHealth].Verdict: healthy, degraded, unhealthy or
// unknown. Unknown is the zero value: a device is never healthy by default. Reason says why,
// Since says since when, and Conditions are the signals that set it, most severe first. The
// driver's own signals feed it:
//   - A fatal Xid, a double-bit ECC error, or a RAS uncorrectable error (NVML's events,
//     amdgpu's sysfs): unhealthy, and the device is lost. Readiness 503.
//   - The recovery action reset-gpu (or drain-and-reset), reboot-node or service (an IMEX
//     domain): unhealthy, lost, readiness 503. NVML's field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
//     (230, R570 on) says it. It is read at the start, every 30 s, on its event and on Xid 154.
//   - The recovery action drain: degraded. Readiness 200, or 503 with [WithDegradedNotReady].
//   - GPU unavailable (NVML's event), AMD's pre-reset, or an AMD ring hang (ROCm SMI's events):
//     unhealthy, lost, readiness 503. A ring hang exists only in ROCm 6.1.2 to 6.3's numbering:
//     5.2.3, and 6.4 on, have none.
//   - A row remap pending (nvmlDeviceGetRemappedRows): degraded, since a GPU reset applies it.
//     Readiness 200, or 503 with WithDegradedNotReady.
//   - A row remap failed (the same call): unhealthy, lost; service the GPU. Readiness 503.
//   - PCIe replays above 8 a minute, DCGM's threshold (nvmlDeviceGetPcieReplayCounter, read
//     every 30 s): degraded while above. Readiness 200, or 503 with WithDegradedNotReady.
//   - The fabric (nvmlDeviceGetGpuFabricInfoV; v3, else v2, which has no summary): a failed
//     registration or an unhealthy summary is unhealthy, lost, readiness 503. Summary 3, limited
//     capacity, is degraded.
//   - An AMD VM fault or thermal throttle (ROCm SMI's events): counted; the device stays healthy.
//   - A monitor call past its deadline: unknown, naming the call, until it returns. Readiness
//     stays 200: unknown never fails it. Every NVML and ROCm SMI call of the watch has the
//     deadline, init included: min(call deadline, 10 s), after an event wait's own timeout (1 s
//     for NVML, 500 ms for ROCm SMI).
//   - No NVML, no ROCm SMI, or no event API: unknown, saying why. Readiness 200.
//
// A signal the driver cannot give stays unknown and costs nothing. Debian's NVML 535 binds 27 of
// the 28 symbols: it has no nvmlDeviceGetGpuFabricInfoV, and answers "not supported" for field
// 230. ROCm SMI is optional (GPUINIT_ROCM_SMI_LIBRARY, else librocm_smi64.so.7 down to .1). Its
// event layout is chosen by rsmi_version_get, never guessed. Its devices are matched to HIP's by
// PCI bus id. An AMD device is watched while RAS or ROCm SMI watches it; Why names the source
// that does not.
//
// Degraded means the device works and needs attention soon. By default the pod stays ready: work
// keeps running while the labels and the status say what is wrong. [WithDegradedNotReady] takes
// it out of service instead. A lost device stays lost for the rest of the process. The driver
// may say the device is usable again: the recovery action back to none after a reset, AMD's
// post-reset event, or a remap applied. Recovered is then set, and the verdict's reason says so.
// Trust the device again only in a new process, after that point: restart the pod, or let
// WithRestartOnDeviceLoss do it.
//
// A hung monitor call never blocks a status, a probe or Shutdown. The call's goroutine is the
// one [device.Stats].HealthWatchAbandoned reports after a shutdown, and nothing else is left.
// The channel of [device.Stats.Changed] is closed at each change, so a feed such as the DRA health
// stream waits instead of polling. gpuprobe exports the verdicts as a node label and as metrics.
//
// Against the anchors: DCGM reports Healthy while nvidia-smi asks for a reset (DCGM #263). The
// NVIDIA device plugin reads no recovery action, and AMD's plugins report no events at all.
//
// # Kubernetes
//
// A probe block for a server on port 8080:
//
//	readinessProbe:
//	  httpGet: {path: /v2/health/ready, port: 8080}
//	  periodSeconds: 5
//	livenessProbe:
//	  httpGet: {path: /v2/health/live, port: 8080}
//	  periodSeconds: 10
//	  failureThreshold: 3
//	env:
//	  - {name: GPUINIT_PREFLIGHT, value: "60s"}   # the driver's init runs in a child first
package health
