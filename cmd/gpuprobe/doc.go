// Command gpuprobe tells an operator, in seconds, whether GPU bring-up works
// on this machine. It also says whether the lazy-initialization paths that
// hung PyTorch are safe here. It prints the backend, the driver and the
// devices. It runs each re-entrant scenario in a child process under a
// timeout, so a hang becomes a verdict with the child's goroutine stacks. It
// checks the device RNG against rng/philox.
//
//	go run ./cmd/gpuprobe                       # cuda, then hip; sim (with the reasons) where neither works
//	go run ./cmd/gpuprobe -require-gpu -json    # no fallback: exit 3 without a usable GPU
//	go run ./cmd/gpuprobe -discipline legacy -timeout 3s   # reproduce PyTorch's pre-fix hang
//
// # On a machine without a GPU
//
// On a development machine without a GPU, go run ./cmd/gpuprobe prints this report.
// Stderr shows the same reasons as they are found. TestThePackageDocPrintsGpuprobesOutput
// checks the sample against a run, the durations aside.
//
//	backend     sim (discipline fixed)
//	fallback    no usable GPU backend; passed over:
//	  cuda  cuda: dlopen failed: libcuda.so.1 not found
//	  hip   hip: dlopen failed: libamdhip64.so.7 not found
//	preflight   2 child(ren), the last failed: no-gpu
//	class       no-gpu
//	init        0.2 ms
//	devices     2
//	  0  gpuinit simulated H100       sm_90    80.0 GiB, 77.0 GiB free (sim)
//	     uuid GPU-5e1d0c0a-9a7f-4b6e-8d2c-000000000000, pci 0000:18:00.0, cc 9.0, 132 multiprocessors
//	     health watched; canary ok 0.0 ms
//	  1  gpuinit simulated H100       sm_90    80.0 GiB, 77.0 GiB free (sim)
//	     uuid GPU-5e1d0c0a-9a7f-4b6e-8d2c-000000000001, pci 0000:19:00.0, cc 9.0, 132 multiprocessors
//	     health watched; canary ok 0.0 ms
//	device map  order FASTEST_FIRST
//	  0  index ?   GPU-5e1d0c0a-9a7f-4b6e-8d2c-000000000000  0000:18:00.0
//	  1  index ?   GPU-5e1d0c0a-9a7f-4b6e-8d2c-000000000001  0000:19:00.0
//	scenarios
//	  ok    initialized/ctx                      41.0 ms
//	  ok    queued/ctx                           34.3 ms
//	  ok    initialized/background               32.7 ms
//	  ok    queued/background                    40.8 ms
//	  ok    initialized/init-from-callback       20.6 ms
//	  ok    queued/init-from-callback            22.0 ms
//	rng         match: 16 values, seed 42, offset 8, curand ordering
//	result      ok on sim; this node's verdict (gpuinit.io/probe, gpuinit_probe_success): no-gpu
//
// A fallback prints no top-level driver line: sim's version (12020) is not this host's. A GPU
// backend whose driver loaded but gave no usable device shows the version it read in its line:
// "cuda  (driver 12040) …". The run exits 0, since sim passed every check. Its verdict is the GPU
// runtime's class (no-gpu): the NFD label and gpuinit_probe_success carry that one. The last line
// says both, and the JSON's verdict is the label's. Use -require-gpu for an exit status about the
// GPU.
//
// # On a GPU host
//
// On a GPU host the same command probes the GPU (backend cuda or hip) and its devices. It shows
// each device's free memory, with where it came from (nvml, meminfo…, as Runtime.Memory in
// package device reports it). It shows the device map (Runtime.DeviceMap): each ordinal, the
// vendor tool's index, the UUID, the PCI bus id and the visibility entry that selected it. The
// map's order comes with a warning where it is not PCI order.
//
// With -require-gpu there is no fallback, and sim never runs. No usable GPU exits 3. Each
// backend's reason, with the driver version it read, is under "passed over" (passed_over in the
// JSON, with no fallback). The backend line stays what was asked (auto). -require-gpu with
// -backend sim, or with GPUINIT_BACKEND=sim, is bad usage (exit 2), refused before anything runs.
//
// gpuprobe -discipline legacy -timeout 3s runs the same scenarios over PyTorch's pre-fix locking.
// Every scenario is then reported as a hang, with the child's goroutines stuck in
// sync.(*Mutex).Lock. A callback's re-entrant LazyCall blocks directly under
// internal/legacy.(*Initializer).Call (initialized/ctx, queued/ctx, initialized/background,
// queued/background). A callback's Init blocks under internal/legacy.(*Initializer).Init
// (initialized/init-from-callback, queued/init-from-callback). The exit status is 1.
//
// The images build gpuprobe for GPU hosts. A CUDA host needs its driver; the image brings
// libcurand:
//
//	docker build -f Dockerfile.cuda -t gpuinit/gpuprobe:cuda .
//	docker run --rm --gpus all gpuinit/gpuprobe:cuda            # add -json for the report as JSON
//
// A ROCm host (gfx90a MI210 or MI250, and later):
//
//	docker build -f Dockerfile.rocm -t gpuinit/gpuprobe:rocm .
//	docker run --rm --device=/dev/kfd --device=/dev/dri --group-add video --group-add render gpuinit/gpuprobe:rocm
//
// Both build stages are the plain golang image: no SDK. The build runs
// build/check-gpu-backends.sh on the binary, which fails the image if cgo was off. Cross builds
// turn cgo off silently. Without Docker, go build ./cmd/gpuprobe on any Linux machine with gcc
// gives the same binary. -tags nocuda or -tags nohip leaves a backend out. -tags cudalink links
// libcuda at build time: the build then needs the CUDA toolkit, and the binary needs
// libcuda.so.1 to start. cuRAND stays loaded at run time, so the binary starts without
// libcurand.so.10. Its runtime_version is then the CUDA_VERSION it was built against.
//
// # Flags
//
//   - -backend auto|cuda|hip|sim: the backend to probe. The default is $GPUINIT_BACKEND, else
//     auto. A name in another case, or an alias such as rocm, is refused with the name meant.
//     The error names GPUINIT_BACKEND when the value came from it.
//   - -require-gpu: probe a GPU or fail, with no fallback to sim.
//   - -timeout: the limit per scenario and for the initialization; 60s by default.
//   - -json: the report as JSON, in the schema below.
//   - -scenario initialized|queued|all, and -discipline fixed|legacy.
//   - -nfd-file and -prom-file: the fleet files, below. -interval repeats the probe.
//   - -watch: how long to watch the driver's health events before reporting.
//   - -preflight: on by default. The driver's init runs in a child first, under -timeout, and is
//     not retried. A hang there is then reported with the driver call its stacks show.
//   - -h: the flags, on stdout, and exit 0.
//
// Progress goes to stderr, the report to stdout. With -interval each round prints its report,
// one after another; with -json, one JSON document per round. Scenario children die with
// gpuprobe, even when it is killed with SIGKILL.
//
// Exit status:
//   - 0: all ok. With -interval, a signal ends the loop with 0.
//   - 1: a scenario hung or failed, the initialization hung, the RNG check failed, a device was
//     lost while probed, or a fleet file could not be written (the JSON's error has kind
//     fleet-files).
//   - 2: bad usage: an unknown flag or value, or -require-gpu with sim. A GPUINIT_* value that
//     cannot be used is bad usage too, and so is a GPUINIT_SIM_* value that sim cannot use where
//     sim may run (-backend sim, or auto without -require-gpu). The message names it.
//   - 3: the backend is unavailable, or there is no device. With -require-gpu: no usable GPU.
//   - 130 or 143: interrupted by SIGINT or SIGTERM, reported as interrupted.
//
// # Scenarios
//
// Each scenario runs in a child process: gpuprobe runs itself again, and sends SIGQUIT, then
// SIGKILL, at the timeout.
//   - initialized/ctx and initialized/background: init, read device 0's RNG state, then LazyCall
//     a callback that calls SetState with it.
//   - queued/ctx and queued/background: before init, LazyCall a callback that calls
//     ManualSeed(0, 42), then init.
//   - initialized/init-from-callback and queued/init-from-callback: a callback that calls Init.
//
// # Across a fleet
//
// gpuprobe -require-gpu -interval 10m -nfd-file … -prom-file … publishes each node's verdict.
// -nfd-file writes Node Feature Discovery labels. gpuinit.io/probe is the verdict: ok, hang,
// failed, device-lost, or the failure class. After a fallback to sim it is the class too
// (no-gpu). The other labels are backend, driver-version, devices, arch.<arch> and rng.
// -prom-file writes node_exporter metrics; gpuinit_probe_success is 1 only for verdict ok.
//
// Without a GPU (a fallback to sim, or a failed bring-up), the labels are the verdict and
// gpuinit.io/reason only. The reason is the lead failure's kind: no-driver, no-device…. There is
// never a device, arch or MIG label, so a nodeSelector on an arch label cannot put GPU pods on a
// CPU node. The metrics then carry no per-device series. gpuinit_devices, gpuinit_driver_version
// and gpuinit_init_failure are each failed GPU backend's (backend="cuda", "hip", with its own
// class), never sim's. Each file is written whatever became of the other: a feature file that
// cannot be written leaves no stale metrics.
//
// MIG instances get the label suffixes of NVIDIA's GPU Feature Discovery, under gpuprobe's own
// prefix, per profile: gpuinit.io/mig-1g.10gb.count, .memory (MiB) and .multiprocessors. GFD's
// other labels (nvidia.com/mig.strategy, mig.capable) describe the GPU's configuration. gpuprobe
// does not read it, so they have no counterpart.
//
// Health is in the fleet files too. The label gpuinit.io/health is the worst device verdict. The
// metrics are gpuinit_device_verdict{verdict=...}, gpuinit_device_recovery_action{action=...},
// gpuinit_device_pcie_replays (DCGM's DCGM_FI_DEV_PCIE_REPLAY_COUNTER) and
// gpuinit_device_row_remap_failed (DCGM_FI_DEV_ROW_REMAP_FAILURE). The others are
// gpuinit_device_health_watched, _health_events, _ecc_errors, _row_remap_pending, _canary_ok and
// _lost.
//
// deploy/kubernetes has the DaemonSets for NVIDIA and AMD nodes, and the whole path: build the
// image, apply the manifests, see the labels, keep inference pods on gpuinit.io/probe=ok nodes,
// and alert on failures.
//
// # The JSON report
//
// -json prints schema gpuprobe/v1. Fields are only added within a version; a change of layout
// gets a new one.
//   - schema (string): gpuprobe/v1.
//   - backend, discipline (string): what ran; cuda, hip or sim, and fixed or legacy.
//   - driver_version, runtime_version (int, omitted when unknown): the driver's version, such as
//     12040 (CUDA 12.4) or 60241134 (HIP 6.2), read at init. For a named backend that failed,
//     its preflight child read it. The runtime's is hipRuntimeGetVersion, or under -tags
//     cudalink the CUDA_VERSION built against. Both are omitted after a fallback (sim's is not
//     the host's) and where auto chose no backend. Each backend's is then in its passed_over or
//     fallback entry.
//   - init_ms (number): how long the initialization took.
//   - devices[] (object): ordinal, name, arch (sm_90, gfx90a), total_memory and free_memory
//     (bytes; free is null where it cannot be read without creating a context), uuid (GPU-… or
//     MIG-… as nvidia-smi prints it, GPU-… as rocm-smi does; empty where none), pci_bus_id
//     (dddd:bb:dd.f), compute_capability ("9.0", CUDA only), multiprocessors, integrated.
//     memory_source says where free_memory came from: nvml, driver-context, amdgpu-vram,
//     amdgpu-gtt, meminfo or sim; it is omitted where not read. pageable_memory_access is
//     omitted when false. mig describes a MIG instance (parent_uuid, parent_pci_bus_id,
//     gpu_instance, compute_instance (-1 where NVML cannot say), profile); it is omitted for a
//     whole GPU. native_arch, arch_source and arch_warning say what an AMD
//     HSA_OVERRIDE_GFX_VERSION changed; they are omitted without one. health has watched, why
//     (when not), counted, counters and watch_error. canary has at, took_ms, ok and error.
//   - device_map (object, omitted where not read): order (CUDA_DEVICE_ORDER as applied; omitted
//     off CUDA); devices[] with ordinal, index (nvidia-smi's number or the KFD node id, -1 where
//     unknown), uuid, pci_bus_id and selected (the visibility entry that made it visible); and
//     warning, where the runtime's order is not PCI order on a host with more than one model.
//   - lost[] ({ordinal, source, error, at}): the devices lost while probed.
//   - visibility (object, omitted when empty): the visibility variables set at init:
//     CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, HIP_VISIBLE_DEVICES,
//     ROCR_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL, HSA_OVERRIDE_GFX_VERSION.
//   - passed_over[] ({backend, driver_version?, error}): the GPU backends auto tried and passed
//     over, with why, and the driver version each read. They are those before its choice. With
//     -require-gpu and no usable GPU they are every one, and there is no fallback.
//   - class (string, omitted on success): the GPU runtime's failure class: no-gpu, not-yet or
//     needs-operator.
//   - bring_up (object, omitted before init): phase, since, backend, preflight, attempts (the
//     preflight children run), last_error, last_class, next_attempt, and in_process (when the
//     in-process part began).
//   - fallback ({reason, backends: [{backend, driver_version?, error}]}): auto found no usable
//     GPU and probed sim instead. Never with -require-gpu.
//   - scenarios[] ({name, description, verdict, duration_ms, error?, dump?}): verdict is ok,
//     hang or error; dump holds the child's gpuinit goroutines for a hang.
//   - rng ({seed, offset, count, ordering, verdict, first_mismatch?, error?}): device 0's
//     generator against rng/philox. verdict is match, mismatch (with first_mismatch: {index,
//     device, philox}), unsupported or error. unsupported means no generators, or no cuRAND or
//     hipRAND; error says why, and it is not a failure.
//   - error ({message, kind?, class?, op?, code?, name?, hint?}): why the probe could not
//     finish. kind is no-device, no-driver, driver-mismatch, not-compiled, hang, interrupted or
//     fleet-files. fleet-files means a -nfd-file or -prom-file could not be written; where the
//     probe had failed already, its error stays, and stderr says which file. class is as above.
//     op, code and name are the driver's failing call and its raw code.
//   - interrupted (string): the signal that stopped the probe.
//   - verdict (string): the node's one word, as the label gpuinit.io/probe and
//     gpuinit_probe_success say it: ok, hang, failed, device-lost or the failure class. After a
//     fallback to sim it is the class (no-gpu), though exit_code is 0.
//   - exit_code (int): the process's exit status.
package main
